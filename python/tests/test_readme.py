"""The package README's example runs as written (in a scratch directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README.md has no python block"
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    exec(compile(blocks[0], str(README), "exec"), scope)
    assert (tmp_path / "host.zpages").exists()
    assert (tmp_path / "zram.dict").stat().st_size > 0
    report = scope["report"]
    assert isinstance(report, dict) and "recommendation" not in report
    # 512 pages are too few to advise on: the decision says so.
    assert report["decision"]["kind"] == "none", report["decision"]
