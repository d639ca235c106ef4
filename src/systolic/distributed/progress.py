"""The rich progress bar of the distributed commands: done / total, vectors (or tasks) per second, ETA."""

from __future__ import annotations

import contextlib

__all__ = ["progress_bar"]


@contextlib.contextmanager
def progress_bar(description: str, unit: str = "vectors", enabled: bool = True):
    """Yields ``update(done_increment, total)``; draws on stderr when ``enabled`` (rich hides it off a terminal
    except for the final line)."""
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task):
            s = task.finished_speed or task.speed
            return Text(f"{s:,.0f} {unit}/s" if s else f"- {unit}/s", style="progress.data.speed")

    if not enabled:
        yield lambda n, total: None
        return
    prog = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn(unit), Rate(), TextColumn("ETA"), TimeRemainingColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=False)
    task = None

    def update(n, total):
        nonlocal task
        if task is None:
            task = prog.add_task(description, total=total)
        prog.update(task, advance=n, total=total)

    with prog:
        yield update
