"""Fuzz: systolic.torch emulate / compare with hostile options, shapes and targets.

Inside torch code a torch error (RuntimeError and its subclasses, as torch raises them for bad shapes) counts as
typed; a bare TypeError / KeyError / AttributeError from systolic's entry points does not. Oracle for compare: an
accuracy is reported only for labels that are class indices of the output.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .harness import examples, hostile, maybe, ok, outcome

torch = pytest.importorskip("torch")
import systolic.torch as sto  # noqa: E402

TORCH_ERRORS = (RuntimeError,)
ENGINES = ["amx:spr", "amx:gnr", "xmx:pvc", "xmx:dg2"]


@examples(12, weight=0.15)
@given(st.data())
def test_emulate_options(data):
    kw = {}
    for k in ("precision", "model", "weight_scales", "backend", "fallback", "bias", "conv_k_order", "bogus"):
        if data.draw(st.integers(0, 3)) == 0:
            kw[k] = data.draw(maybe(st.sampled_from(["bf16", "fp16", "int8", "tf32", "stage", "channel", "cpu",
                                                     "native", "epilogue", "chw"]), 2))
    eng = data.draw(maybe(st.sampled_from(ENGINES), 5))
    r = outcome(sto.emulate, eng, **kw)
    if ok(r):
        shape_a = data.draw(st.sampled_from([(2, 3), (3,), (1, 0), (4, 4)]))
        shape_b = data.draw(st.sampled_from([(3, 2), (3,), (0, 2), (4, 4)]))

        def mm():
            with r[1]:
                return torch.ones(shape_a) @ torch.ones(shape_b)
        outcome(mm, typed=TORCH_ERRORS)


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x)


@examples(6, weight=0.05)
@given(st.data())
def test_compare_targets(data):
    torch.manual_seed(0)
    net = _Net()
    x = torch.randn(6, 8)
    targets = data.draw(st.one_of(st.lists(st.integers(-2, 6), min_size=5, max_size=7), hostile(),
                                  st.just(torch.tensor([0, 1, 2, 3, 0, 1]))))
    k = data.draw(maybe(st.integers(1, 4), 6))
    r = outcome(sto.compare, net, x, engines=data.draw(maybe(st.sampled_from([("amx:spr",), ("xmx:pvc",)]), 6)),
                k=k, targets=targets, typed=TORCH_ERRORS)
    if ok(r) and r[1].runs and r[1].runs[0].accuracy is not None:
        t = torch.as_tensor(targets).reshape(-1)
        assert t.numel() == 6 and int(t.min()) >= 0 and int(t.max()) < 4, targets


@pytest.mark.parametrize("targets", [[0, 1, 2, 3, 0, 4], [-1, 0, 0, 0, 0, 0]])
def test_labels_outside_the_classes_are_refused(targets):
    """4 classes: label 4 or -1 matches no output; an accuracy over them would claim a comparison not made."""
    from systolic.errors import InvalidValue
    torch.manual_seed(0)
    with pytest.raises(InvalidValue, match="outside the model's 4 classes"):
        sto.compare(_Net(), torch.randn(6, 8), engines=("amx:spr",), targets=targets)
