"""Reader for the subset of LLVM IR text that AMX tile code uses.

It accepts both forms the project meets (REFERENCE.md section 7):

* the seed proposal's (specs/amx-llvm-programming-model.md section 5): ``<256 x i32>`` tile values,
  ``@llvm.x86.tileloadd64(i16 m, i16 n, i8* base, i64 stride)``, ``@llvm.x86.tdpbssd(i16, i16, i16, <256 x i32>
  x3)``, typed pointers and ``getelementptr inbounds (...)`` constant expressions, attribute-group references
  (``#3``) without their definitions and intrinsics used without a ``declare``;
* LLVM's final form: ``x86_amx``, the ``*.internal`` intrinsics, opaque ``ptr``, ``bitcast``/``cast`` between
  ``<256 x i32>`` and ``x86_amx``, and -O0 style ``alloca``/``load``/``store`` of ``<256 x i32>``.

Everything outside the subset (floating point scalars, switch, structs, ...) is an AsmSyntaxError with line and
column, never a crash.
"""

from __future__ import annotations

import re

from ..errors import AsmSyntaxError
from .ir import (BINARY_OPS, CAST_OPS, I1, ICMP_PREDICATES, LABEL, VOID, X86_AMX, Argument, ArrayType,
                 Block, ConstantInt, ConstantSpecial, ConstGEP, Function, GlobalVariable, Instr, IntType,
                 Module, PtrType, TileType, Type, Value, VectorType, size_of)

__all__ = ["parse", "parse_type"]

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+) | (?P<nl>\n) | (?P<comment>;[^\n]*)
  | (?P<label>(?:[-a-zA-Z$._0-9]+|"[^"\n]*"):)
  | (?P<local>%(?:[-a-zA-Z$._][-a-zA-Z$._0-9]*|[0-9]+|"[^"\n]*"))
  | (?P<global>@(?:[-a-zA-Z$._][-a-zA-Z$._0-9]*|[0-9]+|"[^"\n]*"))
  | (?P<attrgrp>\#[0-9]+)
  | (?P<meta>![-a-zA-Z$._0-9]*)
  | (?P<cstring>c"[^"\n]*")
  | (?P<string>"[^"\n]*")
  | (?P<int>-?[0-9]+)
  | (?P<dots>\.\.\.)
  | (?P<ident>[a-zA-Z_$.][-a-zA-Z$._0-9]*)
  | (?P<punct>[()\[\]{}<>,=*:])
""", re.VERBOSE)

_VALUE_WORDS = {"true", "false", "undef", "poison", "null", "zeroinitializer", "getelementptr", "bitcast"}
_MAX_VECTOR = 1 << 20
_MAX_BYTES = 1 << 28   # largest type the reader accepts (globals and allocas become arrays of this size)
_MAX_DEPTH = 32        # nesting of types and constant expressions


class _Tok:
    __slots__ = ("kind", "text", "line", "col")

    def __init__(self, kind, text, line, col):
        self.kind, self.text, self.line, self.col = kind, text, line, col

    def __repr__(self):
        return f"{self.kind}:{self.text!r}@{self.line}:{self.col}"


def _unquote(s: str) -> str:
    if s.startswith('"'):
        return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), s[1:-1])
    return s


def _tokenize(text: str, source: str | None) -> list[_Tok]:
    toks, pos, line, line_start = [], 0, 1, 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise AsmSyntaxError(f"unexpected character {text[pos]!r}", line=line, column=pos - line_start + 1,
                                 source=source, rule="LLVM LangRef: lexical structure")
        kind = m.lastgroup
        if kind == "nl":
            line, line_start = line + 1, m.end()
        elif kind not in ("ws", "comment"):
            toks.append(_Tok(kind, m.group(), line, pos - line_start + 1))
        pos = m.end()
    toks.append(_Tok("eof", "", line, pos - line_start + 1))
    return toks


class _Placeholder(Value):
    def __init__(self, name: str, type: Type, tok: _Tok):
        self.name, self.type, self.tok = name, type, tok


class _Parser:
    def __init__(self, text: str, source: str | None):
        self.source = source
        self.toks = _tokenize(text, source)
        # typed pointers (``i8*``, the seed's LLVM) or opaque ``ptr`` (LLVM >= 15): one spelling per module
        self.opaque = any(t.kind == "ident" and t.text == "ptr" for t in self.toks)
        self.i = 0
        self.module = Module(source=source)
        self.fn: Function | None = None
        self.locals: dict[str, Value] = {}
        self.pending: dict[str, _Placeholder] = {}

    # ---------------------------------------------------------------- token helpers
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def error(self, msg: str, tok: _Tok | None = None, rule: str = "LLVM LangRef (subset read by systolic)"):
        t = tok or self.tok
        raise AsmSyntaxError(msg, line=t.line, column=t.col, source=self.source, rule=rule,
                             values={"token": t.text or "<end of input>"})

    def accept(self, text: str) -> bool:
        if self.tok.text == text and self.tok.kind in ("punct", "ident", "dots"):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> _Tok:
        if not self.accept(text):
            self.error(f"expected '{text}'")
        return self.toks[self.i - 1]

    def expect_int(self) -> int:
        t = self.tok
        if t.kind != "int":
            self.error("expected an integer")
        self.i += 1
        return int(t.text)

    # ---------------------------------------------------------------- types
    def at_type(self) -> bool:
        t = self.tok
        if t.kind == "punct":
            return t.text in ("<", "[")
        return t.kind == "ident" and (t.text in ("void", "ptr", "x86_amx", "label")
                                      or re.fullmatch(r"i[0-9]+", t.text) is not None)

    def parse_type(self) -> Type:
        self.depth = getattr(self, "depth", 0) + 1
        try:
            if self.depth > _MAX_DEPTH:
                self.error(f"types nested deeper than {_MAX_DEPTH}")
            ty = self._parse_type()
        finally:
            self.depth -= 1
        if isinstance(ty, (ArrayType, VectorType)) and size_of(ty) > _MAX_BYTES:
            self.error(f"type {ty} is larger than {_MAX_BYTES} bytes")
        return ty

    def _parse_type(self) -> Type:
        t = self.next()
        ty: Type
        if t.kind == "ident" and re.fullmatch(r"i[0-9]+", t.text):
            bits = int(t.text[1:])
            if not 1 <= bits <= 128:
                self.error(f"integer type {t.text} outside i1..i128", t)
            ty = IntType(bits)
        elif t.text == "void" and t.kind == "ident":
            ty = VOID
        elif t.text == "ptr" and t.kind == "ident":
            ty = PtrType()
            if self.tok.text == "addrspace":
                self.error("address spaces are not supported")
        elif t.text == "x86_amx" and t.kind == "ident":
            ty = X86_AMX
        elif t.text == "label" and t.kind == "ident":
            ty = LABEL
        elif t.text in ("<", "[") and t.kind == "punct":
            n_tok = self.tok
            n = self.expect_int()
            if not 0 < n <= _MAX_VECTOR:
                self.error(f"aggregate length {n} outside 1..{_MAX_VECTOR}", n_tok)
            self.expect("x")
            elem = self.parse_type()
            if not isinstance(elem, (IntType, PtrType, ArrayType, VectorType)) or \
                    (t.text == "<" and not isinstance(elem, (IntType, PtrType))):
                self.error(f"element type {elem} not allowed here", n_tok)
            self.expect(">" if t.text == "<" else "]")
            ty = VectorType(n, elem) if t.text == "<" else ArrayType(n, elem)
        else:
            self.i -= 1
            self.error("expected a type (the reader supports iN, ptr, T*, <N x T>, [N x T], x86_amx, void)")
        while self.tok.text == "*" and self.tok.kind == "punct":
            self.i += 1
            if ty in (VOID, LABEL):
                self.error(f"pointer to {ty}")
            ty = PtrType(ty)
        if self.tok.text == "(" and self.tok.kind == "punct":
            self.error("function types are not supported")
        return ty

    # ---------------------------------------------------------------- values
    def skip_param_attrs(self) -> list[str]:
        words = []
        while self.tok.kind == "ident" and self.tok.text not in _VALUE_WORDS:
            w = self.next().text
            if w in ("align", "dereferenceable", "dereferenceable_or_null") and self.tok.kind == "int":
                w += " " + self.next().text
            elif self.tok.text == "(" and self.tok.kind == "punct":
                depth = 0
                parts = []
                while True:
                    t = self.next()
                    if t.kind == "eof":
                        self.error("unbalanced parentheses in an attribute", t)
                    parts.append(t.text)
                    depth += (t.text == "(") - (t.text == ")")
                    if depth == 0:
                        break
                w += "".join(parts)
            words.append(w)
        return words

    def parse_value(self, ty: Type) -> Value:
        self.depth = getattr(self, "depth", 0) + 1
        try:
            if self.depth > _MAX_DEPTH:
                self.error(f"constant expressions nested deeper than {_MAX_DEPTH}")
            return self._parse_value(ty)
        finally:
            self.depth -= 1

    def _parse_value(self, ty: Type) -> Value:
        t = self.tok
        if t.kind == "local":
            self.i += 1
            if self.fn is None:
                self.error("local value outside a function", t)
            name = _unquote(t.text[1:])
            v = self.locals.get(name)
            if v is None:
                v = self.pending.get(name)
                if v is None:
                    v = self.pending[name] = _Placeholder(name, ty, t)
            if v.type != ty:
                self.error(f"%{name} has type {v.type}, used as {ty}", t, rule="LLVM LangRef: operand types")
            return v
        if t.kind == "global":
            self.i += 1
            name = _unquote(t.text[1:])
            g = self.module.globals.get(name) or self.module.functions.get(name)
            if g is None:
                self.error(f"use of undefined global @{name}", t)
            if not isinstance(ty, PtrType):
                self.error(f"global @{name} used as {ty}; globals are pointers", t)
            if isinstance(g, GlobalVariable) and g.type != ty:
                self.error(f"@{name} has type {g.type}, used as {ty}", t, rule="LLVM LangRef: operand types")
            return g
        if t.kind == "int":
            self.i += 1
            if not isinstance(ty, IntType):
                self.error(f"integer constant for non-integer type {ty}", t)
            v = int(t.text)
            if not -(1 << ty.bits) < v < (1 << ty.bits):
                self.error(f"constant {v} does not fit {ty}", t)
            return ConstantInt(ty, v)
        if t.kind == "ident":
            if t.text in ("true", "false"):
                self.i += 1
                if ty != I1:
                    self.error(f"{t.text} needs type i1, not {ty}", t)
                return ConstantInt(I1, 1 if t.text == "true" else 0)
            if t.text in ("undef", "poison", "zeroinitializer"):
                self.i += 1
                return ConstantSpecial(ty, t.text)
            if t.text == "null":
                self.i += 1
                if not isinstance(ty, PtrType):
                    self.error("null needs a pointer type", t)
                return ConstantSpecial(ty, "null")
            if t.text == "getelementptr":
                self.i += 1
                inbounds = self.accept("inbounds")
                self.expect("(")
                src = self.parse_type()
                self.expect(",")
                bty = self.parse_type()
                base = self.parse_value(bty)
                idx = []
                while self.accept(","):
                    ity = self.parse_type()
                    if not isinstance(ity, IntType):
                        self.error("getelementptr index must be an integer")
                    idx.append(self.parse_value(ity))
                self.expect(")")
                rty = self.gep_type(src, bty, idx, t)
                if rty != ty:
                    self.error(f"getelementptr yields {rty}, used as {ty}", t)
                return ConstGEP(src, base, idx, inbounds, rty)
        self.error(f"expected a value of type {ty}")

    def gep_type(self, src: Type, bty: Type, idx: list[Value], tok: _Tok) -> Type:
        if not isinstance(bty, PtrType):
            self.error("getelementptr base must be a pointer", tok)
        if bty.pointee is not None and bty.pointee != src:
            self.error(f"getelementptr source type {src} does not match pointer {bty}", tok)
        if not idx:
            self.error("getelementptr needs at least one index", tok)
        cur = src
        for v in idx[1:]:
            if not isinstance(cur, (ArrayType, VectorType)):
                self.error(f"cannot index into {cur}", tok)
            cur = cur.elem
        try:
            size_of(cur)
        except TypeError:
            self.error(f"getelementptr over unsized type {cur}", tok)
        return PtrType(cur) if bty.pointee is not None else PtrType()

    def typed_value(self) -> Value:
        ty = self.parse_type()
        self.skip_param_attrs()
        return self.parse_value(ty)

    def skip_trailing_meta(self, ins: Instr | None = None) -> None:
        while self.tok.text == "," and self.peek().kind == "ident" and self.peek().text == "align":
            self.i += 2
            a = self.expect_int()
            if ins is not None:
                ins.attrs["align"] = a
        while self.tok.text == "," and self.peek().kind == "meta":
            self.i += 2
            if self.tok.kind == "meta":
                self.i += 1

    # ---------------------------------------------------------------- top level
    def parse_module(self) -> Module:
        while self.tok.kind != "eof":
            t = self.tok
            if t.kind == "ident" and t.text in ("source_filename", "target"):
                start = t.line
                words = []
                while self.tok.kind != "eof" and self.tok.line == start:
                    words.append(self.next().text)
                self.module.header.append(" ".join(words).replace(" = ", " = "))
            elif t.kind == "ident" and t.text == "attributes":
                self.i += 1
                if self.tok.kind != "attrgrp":
                    self.error("expected #N after 'attributes'")
                self.i += 1
                self.expect("=")
                self.skip_braces()
            elif t.kind == "meta":
                # metadata definitions: skip to the end of the line
                line = t.line
                while self.tok.kind != "eof" and self.tok.line == line:
                    self.i += 1
            elif t.kind == "global":
                self.parse_global()
            elif t.kind == "ident" and t.text == "declare":
                self.parse_function(define=False)
            elif t.kind == "ident" and t.text == "define":
                self.parse_function(define=True)
            else:
                self.error("expected a global, 'declare' or 'define'")
        return self.module

    def skip_braces(self) -> None:
        self.expect("{")
        depth = 1
        while depth:
            t = self.next()
            if t.kind == "eof":
                self.error("unterminated '{'", t)
            if t.kind == "punct":
                depth += (t.text == "{") - (t.text == "}")

    def parse_global(self) -> None:
        t = self.next()
        name = _unquote(t.text[1:])
        if name in self.module.globals or name in self.module.functions:
            self.error(f"redefinition of @{name}", t)
        self.expect("=")
        words = []
        while self.tok.kind == "ident" and self.tok.text not in ("global", "constant"):
            words.append(self.next().text)
        if self.tok.text not in ("global", "constant"):
            self.error("expected 'global' or 'constant'")
        constant = self.next().text == "constant"
        vt = self.parse_type()
        try:
            size_of(vt)
        except TypeError:
            self.error(f"global of unsized type {vt}", t)
        external = "external" in words or "extern_weak" in words
        init: object = None
        if not external:
            init = self.parse_initializer(vt)
        g = GlobalVariable(name, vt, constant=constant, linkage=" ".join(words), initializer=init,
                           typed_ptr=not self.opaque, external=external)
        self.module.globals[name] = g
        while self.accept(","):
            if self.accept("align"):
                g.align = self.expect_int()
            elif self.tok.kind == "ident":
                self.i += 1
                if self.tok.kind in ("string", "int"):
                    self.i += 1
            elif self.tok.kind == "meta":
                self.i += 1
                if self.tok.kind == "meta":
                    self.i += 1
            else:
                self.error("unexpected global attribute")

    def parse_initializer(self, vt: Type):
        t = self.tok
        if t.kind == "ident" and t.text in ("zeroinitializer", "undef", "poison"):
            self.i += 1
            return "zeroinitializer" if t.text != "undef" else "undef"
        if t.kind == "int":
            if not isinstance(vt, IntType):
                self.error(f"integer initializer for {vt}")
            return self.parse_value(vt).value
        if t.kind == "cstring":
            self.i += 1
            raw = t.text[2:-1]
            data = bytearray()
            k = 0
            while k < len(raw):
                if raw[k] == "\\" and re.fullmatch(r"[0-9A-Fa-f]{2}", raw[k + 1:k + 3] or ""):
                    data.append(int(raw[k + 1:k + 3], 16))
                    k += 3
                else:
                    data.extend(raw[k].encode("utf-8"))
                    k += 1
            if not (isinstance(vt, ArrayType) and vt.elem == IntType(8) and vt.count == len(data)):
                self.error(f"string initializer of {len(data)} bytes for {vt}", t)
            return bytes(data)
        if t.text in ("[", "<") and t.kind == "punct":
            close = "]" if t.text == "[" else ">"
            if not isinstance(vt, (ArrayType, VectorType)) or not isinstance(vt.elem, IntType):
                self.error(f"aggregate initializer for {vt} (only integer arrays/vectors are supported)")
            self.i += 1
            vals = []
            while True:
                et = self.parse_type()
                if et != vt.elem:
                    self.error(f"element of type {et} in {vt}")
                c = self.parse_value(et)
                if not isinstance(c, ConstantInt):
                    self.error("aggregate initializer elements must be integers")
                vals.append(c.value)
                if not self.accept(","):
                    break
            self.expect(close)
            if len(vals) != vt.count:
                self.error(f"{len(vals)} initializer elements for {vt}", t)
            return vals
        self.error("expected an initializer (zeroinitializer, undef, integer, c\"...\", [ ... ])")

    def parse_function(self, define: bool) -> None:
        kw = self.next()
        prefix = []
        while not self.at_type():
            if self.tok.kind != "ident":
                self.error("expected the return type")
            prefix.append(self.next().text)
        ret = self.parse_type()
        if self.tok.kind != "global":
            self.error("expected the function name (@name)")
        nt = self.next()
        name = _unquote(nt.text[1:])
        if name.startswith("llvm.dbg.") and not define:
            self.skip_line(nt.line)  # debug intrinsics carry metadata only: they are dropped
            return
        old = self.module.functions.get(name)
        if name in self.module.globals or (old is not None and not old.implicit):
            self.error(f"redefinition of @{name}", nt)
        self.expect("(")
        params: list[Argument] = []
        varargs = False
        self.locals, self.pending = {}, {}
        if not self.accept(")"):
            while True:
                if self.accept("..."):
                    varargs = True
                    self.expect(")")
                    break
                pt = self.parse_type()
                attrs = self.skip_param_attrs()
                if self.tok.kind == "local":
                    pn = _unquote(self.next().text[1:])
                else:
                    pn = str(len(params))
                if any(p.name == pn for p in params):
                    self.error(f"duplicate parameter %{pn}")
                params.append(Argument(pt, pn, tuple(attrs)))
                if self.accept(")"):
                    break
                self.expect(",")
        suffix = []
        while self.tok.kind != "eof" and not (self.tok.kind == "punct" and self.tok.text == "{") \
                and not (not define and self.tok.kind in ("global", "eof") or
                         (not define and self.tok.kind == "ident" and self.tok.text in ("declare", "define",
                                                                                        "attributes"))):
            st = self.next()
            if st.line != nt.line and not define:
                self.i -= 1
                break
            suffix.append(st.text)
        fn = Function(name, ret, params, declaration=not define, prefix=" ".join(prefix), suffix=" ".join(suffix),
                      varargs=varargs)
        fn.meta["loc"] = kw.line
        if old is not None:  # an implicit declaration made by an earlier call: keep identity for the callers
            old.__dict__.update(fn.__dict__)
            fn = old
        self.module.functions[name] = fn
        if not define:
            return
        self.fn = fn
        for p in params:
            self.locals[p.name] = p
        self.expect("{")
        self.parse_body(fn)
        self.expect("}")
        self.fn = None

    def parse_body(self, fn: Function) -> None:
        block: Block | None = None
        pending_blocks: dict[str, tuple[Block, _Tok]] = {}
        while not (self.tok.kind == "punct" and self.tok.text == "}"):
            t = self.tok
            if t.kind == "eof":
                self.error("unterminated function body", t)
            if t.kind == "label":
                self.i += 1
                bname = _unquote(t.text[:-1])
                if block is not None and block.terminator is None:
                    self.error(f"block %{block.name} does not end with a terminator", t)
                if fn.block_named(bname) is not None or bname in self.locals:
                    self.error(f"redefinition of label %{bname}", t)
                block = self.block_ref(fn, bname, pending_blocks, define=True)
                continue
            if block is None:
                block = self.block_ref(fn, "entry" if fn.block_named("entry") is None else fn.fresh("bb"),
                                       pending_blocks, define=True)
            elif block.terminator is not None:
                self.error("instruction after a terminator (a new block needs a label)", t)
            ins = self.parse_instruction(fn, pending_blocks)
            if ins is None:
                continue
            if ins.opcode == "phi" and block.first_non_phi() < len(block.instrs):
                self.error("phi after a non-phi instruction", t)
            block.append(ins)
        if block is None:
            self.error("function body without instructions")
        if block.terminator is None:
            self.error(f"block %{block.name} does not end with a terminator")
        for bname, (b, tok) in pending_blocks.items():
            if b not in fn.blocks:
                self.error(f"branch to undefined label %{bname}", tok)
        for name, ph in self.pending.items():
            if name not in self.locals:
                self.error(f"use of undefined value %{name}", ph.tok)
        self.resolve_placeholders(fn)
        for b in fn.blocks:
            for ins in b.phis():
                preds = fn.predecessors()[b]
                if set(ins.attrs["blocks"]) != set(preds) or len(ins.attrs["blocks"]) != len(preds):
                    raise AsmSyntaxError(
                        f"phi %{ins.name} incoming blocks {[x.name for x in ins.attrs['blocks']]} do not match "
                        f"the predecessors {[x.name for x in preds]} of %{b.name}",
                        line=ins.attrs.get("loc", 0), column=1, source=self.source,
                        rule="LLVM LangRef: phi has one entry per predecessor",
                        values={"phi": ins.name})

    def resolve_placeholders(self, fn: Function) -> None:
        if not self.pending:
            return
        for ins in fn.instructions():
            for k, op in enumerate(ins.operands):
                if isinstance(op, _Placeholder):
                    real = self.locals[op.name]
                    if real.type != op.type:
                        self.error(f"%{op.name} has type {real.type}, used as {op.type}", op.tok)
                    ins.operands[k] = real
        self.pending = {}

    def block_ref(self, fn: Function, name: str, pending: dict, define: bool = False, tok=None) -> Block:
        if name in pending:
            b = pending[name][0]
        else:
            b = Block(name)
            b.function = fn
            pending[name] = (b, tok or self.tok)
        if define:
            fn.blocks.append(b)
        return b

    def label_operand(self, fn: Function, pending: dict) -> Block:
        self.expect("label")
        t = self.tok
        if t.kind != "local":
            self.error("expected a label (%name)")
        self.i += 1
        return self.block_ref(fn, _unquote(t.text[1:]), pending, tok=t)

    def define(self, name: str | None, ins: Instr, tok: _Tok) -> None:
        if name is None:
            return
        if name in self.locals:
            self.error(f"redefinition of %{name}", tok)
        ins.name = name
        self.locals[name] = ins

    def parse_instruction(self, fn: Function, pending: dict) -> Instr:
        start = self.tok
        name = None
        if start.kind == "local":
            name = _unquote(start.text[1:])
            self.i += 1
            self.expect("=")
        t = self.next()
        if t.kind != "ident":
            self.error("expected an instruction", t)
        op = t.text
        ins = self._instruction(op, t, fn, pending)
        if ins is None:  # a dropped debug intrinsic
            if name is not None:
                self.error("a debug intrinsic has no result", start)
            return None
        ins.attrs["loc"] = start.line
        if ins.type == VOID and name is not None:
            self.error(f"void instruction cannot be named %{name}", start)
        if ins.type != VOID and name is None and op != "call":
            self.error(f"result of {op} needs a name", start)
        if name is None and ins.type != VOID:
            name = fn.fresh("r")
            while name in self.locals:
                name = fn.fresh("r")
        self.define(name, ins, start)
        return ins

    def _instruction(self, op: str, t: _Tok, fn: Function, pending: dict) -> Instr:
        if op in BINARY_OPS:
            flags = []
            while self.tok.text in ("nuw", "nsw", "exact", "disjoint"):
                flags.append(self.next().text)
            ty = self.parse_type()
            if not isinstance(ty, IntType):
                self.error(f"{op} supports integer types only, not {ty}", t)
            a = self.parse_value(ty)
            self.expect(",")
            b = self.parse_value(ty)
            return Instr(op, ty, [a, b], flags=flags)
        if op == "icmp":
            pt = self.next()
            if pt.text not in ICMP_PREDICATES:
                self.error(f"unknown icmp predicate {pt.text!r}", pt)
            ty = self.parse_type()
            if not isinstance(ty, (IntType, PtrType)):
                self.error(f"icmp on {ty}", t)
            a = self.parse_value(ty)
            self.expect(",")
            b = self.parse_value(ty)
            return Instr("icmp", I1, [a, b], pred=pt.text)
        if op in CAST_OPS:
            a = self.typed_value()
            self.expect("to")
            ty = self.parse_type()
            self.check_cast(op, a.type, ty, t)
            return Instr(op, ty, [a])
        if op == "select":
            c = self.typed_value()
            if c.type != I1:
                self.error("select condition must be i1", t)
            self.expect(",")
            a = self.typed_value()
            self.expect(",")
            b = self.typed_value()
            if a.type != b.type:
                self.error("select operands differ in type", t)
            return Instr("select", a.type, [c, a, b])
        if op == "phi":
            ty = self.parse_type()
            vals, blocks = [], []
            while True:
                self.expect("[")
                vals.append(self.parse_value(ty))
                self.expect(",")
                bt = self.tok
                if bt.kind != "local":
                    self.error("expected a block label in phi")
                self.i += 1
                blocks.append(self.block_ref(fn, _unquote(bt.text[1:]), pending, tok=bt))
                self.expect("]")
                if not self.accept(","):
                    break
            if len(set(blocks)) != len(blocks):
                self.error("phi names a block twice", t)
            return Instr("phi", ty, vals, blocks=blocks)
        if op == "br":
            if self.tok.text == "label":
                return Instr("br", VOID, [], blocks=[self.label_operand(fn, pending)])
            c = self.typed_value()
            if c.type != I1:
                self.error("branch condition must be i1", t)
            self.expect(",")
            a = self.label_operand(fn, pending)
            self.expect(",")
            b = self.label_operand(fn, pending)
            return Instr("br", VOID, [c], blocks=[a, b])
        if op == "ret":
            if self.accept("void"):
                if fn.ret_type != VOID:
                    self.error(f"ret void in a function returning {fn.ret_type}", t)
                return Instr("ret", VOID, [])
            v = self.typed_value()
            if v.type != fn.ret_type:
                self.error(f"ret {v.type} in a function returning {fn.ret_type}", t)
            return Instr("ret", VOID, [v])
        if op == "unreachable":
            return Instr("unreachable", VOID, [])
        if op in ("tail", "musttail", "notail"):
            if not self.accept("call"):
                self.error("expected 'call'")
            ins = self._call(fn, t)
            ins.attrs["tail"] = op
            return ins
        if op == "call":
            return self._call(fn, t)
        if op == "getelementptr":
            flags = []
            while self.tok.text in ("inbounds", "nuw", "nusw"):
                flags.append(self.next().text)
            src = self.parse_type()
            self.expect(",")
            base = self.typed_value()
            idx = []
            while self.tok.text == "," and self.peek().kind != "meta" and self.peek().text != "align":
                self.i += 1
                v = self.typed_value()
                if not isinstance(v.type, IntType):
                    self.error("getelementptr index must be an integer", t)
                idx.append(v)
            rty = self.gep_type(src, base.type, idx, t)
            ins = Instr("getelementptr", rty, [base] + idx, source_type=src, flags=flags)
            self.skip_trailing_meta(ins)
            return ins
        if op == "load":
            self.accept("volatile")
            ty = self.parse_type()
            self.expect(",")
            p = self.typed_value()
            if not isinstance(p.type, PtrType) or (p.type.pointee is not None and p.type.pointee != ty):
                self.error(f"load of {ty} through {p.type}", t)
            self.check_memory_type(ty, t)
            ins = Instr("load", ty, [p])
            self.skip_trailing_meta(ins)
            return ins
        if op == "store":
            self.accept("volatile")
            v = self.typed_value()
            self.expect(",")
            p = self.typed_value()
            if not isinstance(p.type, PtrType) or (p.type.pointee is not None and p.type.pointee != v.type):
                self.error(f"store of {v.type} through {p.type}", t)
            self.check_memory_type(v.type, t)
            ins = Instr("store", VOID, [v, p])
            self.skip_trailing_meta(ins)
            return ins
        if op == "alloca":
            ty = self.parse_type()
            try:
                size_of(ty)
            except TypeError:
                self.error(f"alloca of unsized type {ty}", t)
            if self.tok.text == "," and self.peek().kind == "ident" and self.peek().text != "align":
                self.error("alloca with an element count is not supported", t)
            ins = Instr("alloca", PtrType(ty) if self.typed_pointers() else PtrType(), [], alloc_type=ty)
            self.skip_trailing_meta(ins)
            return ins
        self.error(f"unsupported instruction {op!r}", t)

    def typed_pointers(self) -> bool:
        """Whether the module spells pointers as ``T*`` rather than ``ptr``."""
        return not self.opaque

    def check_memory_type(self, ty: Type, t: _Tok) -> None:
        if isinstance(ty, TileType):
            self.error("x86_amx values cannot be loaded or stored (LLVM: x86_amx has no memory layout)", t,
                       rule="LLVM LangRef: x86_amx")
        if not isinstance(ty, (IntType, PtrType)) and not (isinstance(ty, VectorType) and isinstance(ty.elem,
                                                                                                      IntType)):
            self.error(f"load/store of {ty} is not supported", t)

    def check_cast(self, op: str, a: Type, b: Type, t: _Tok) -> None:
        ok = False
        if op in ("sext", "zext"):
            ok = isinstance(a, IntType) and isinstance(b, IntType) and a.bits < b.bits
        elif op == "trunc":
            ok = isinstance(a, IntType) and isinstance(b, IntType) and a.bits > b.bits
        elif op == "ptrtoint":
            ok = isinstance(a, PtrType) and isinstance(b, IntType)
        elif op == "inttoptr":
            ok = isinstance(a, IntType) and isinstance(b, PtrType)
        elif op in ("bitcast", "addrspacecast"):
            ok = (isinstance(a, PtrType) and isinstance(b, PtrType)) or \
                 {a, b} == {VectorType(256, IntType(32)), X86_AMX} or \
                 (isinstance(a, (IntType, VectorType)) and isinstance(b, (IntType, VectorType))
                  and not isinstance(a, TileType) and _bits(a) == _bits(b))
        if not ok:
            self.error(f"invalid cast {op} from {a} to {b}", t, rule="LLVM LangRef: conversion operations")

    def _call(self, fn: Function, t: _Tok) -> Instr:
        while self.tok.kind == "ident" and not self.at_type():
            self.next()  # fast-math flags, calling convention, return attributes
        ret = self.parse_type()
        if self.tok.text == "(" and self.tok.kind == "punct":
            self.error("explicit function types in calls are not supported")
        ct = self.tok
        if ct.kind != "global":
            self.error("expected the callee (@name); indirect calls are not supported")
        self.i += 1
        cname = _unquote(ct.text[1:])
        if cname.startswith("llvm.dbg."):
            if ret != VOID:
                self.error("debug intrinsics return void", ct)
            self.skip_line(ct.line)  # llvm.dbg.value(metadata ...) describes variables: no semantics
            return None
        self.expect("(")
        args: list[Value] = []
        if not self.accept(")"):
            while True:
                args.append(self.typed_value())
                if self.accept(")"):
                    break
                self.expect(",")
        while self.tok.kind in ("ident", "attrgrp") and self.tok.line == ct.line and \
                self.tok.text not in ("declare", "define", "attributes"):
            self.next()
            if self.tok.text == "(" and self.tok.kind == "punct":
                self.skip_parens()
        self.skip_trailing_meta()
        callee = self.module.functions.get(cname)
        if cname in self.module.globals:
            self.error(f"@{cname} is not a function", ct)
        if callee is None:
            if not cname.startswith("llvm."):
                self.error(f"call to undeclared function @{cname}", ct)
            # the seed's IR calls intrinsics without declaring them: declare them from the call
            callee = Function(cname, ret, [Argument(a.type, str(k)) for k, a in enumerate(args)],
                              declaration=True, implicit=True)
            self.module.functions[cname] = callee
        if callee.ret_type != ret:
            self.error(f"@{cname} returns {callee.ret_type}, called as returning {ret}", ct)
        if not callee.varargs and len(callee.params) != len(args) or \
                any(p.type != a.type for p, a in zip(callee.params, args)):
            self.error(f"arguments ({', '.join(str(a.type) for a in args)}) do not match @{cname}"
                       f"({', '.join(str(p.type) for p in callee.params)})", ct)
        return Instr("call", ret, args, callee=callee)

    def skip_line(self, line: int) -> None:
        while self.tok.kind != "eof" and self.tok.line == line:
            self.i += 1

    def skip_parens(self) -> None:
        depth = 0
        while True:
            t = self.next()
            if t.kind == "eof":
                self.error("unbalanced parentheses", t)
            depth += (t.text == "(") - (t.text == ")")
            if depth == 0:
                return


def _bits(t: Type) -> int:
    if isinstance(t, IntType):
        return t.bits
    return t.count * _bits(t.elem)


def parse(text: str, source: str | None = None) -> Module:
    """Parse LLVM IR text (the subset above) into a :class:`Module`; errors are AsmSyntaxError(line, column)."""
    if not isinstance(text, str):
        raise TypeError("parse() takes IR text (str)")
    p = _Parser(text, source)
    m = p.parse_module()
    m.text = text
    return m


def parse_type(text: str) -> Type:
    p = _Parser(text, None)
    ty = p.parse_type()
    if p.tok.kind != "eof":
        p.error("trailing text after the type")
    return ty
