"""tools/html_diff.py (the before/after comparison of two built sites) reports every difference."""

from __future__ import annotations

from pathlib import Path

from html_diff import compare, main


def _site(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


PAGES = {"index.html": b"<p>a</p>\n<p>b</p>\n", "_static/x.png": b"\x89PNG\x00\x01", "lite/.build-key": b"k"}


def test_identical_trees_report_nothing(tmp_path, capsys):
    before, after = _site(tmp_path / "a", PAGES), _site(tmp_path / "b", PAGES)
    assert compare(before, after) == []
    assert main([str(before), str(after)]) == 0
    assert capsys.readouterr().out == "identical: 3 files, every byte the same\n"


def test_every_kind_of_difference_is_reported(tmp_path):
    before = _site(tmp_path / "a", PAGES)
    after = _site(tmp_path / "b", {**PAGES, "index.html": b"<p>a</p>\n<p>c</p>\n",
                                   "_static/x.png": b"\x89PNG\x00\x02", "new.html": b""})
    (after / "lite" / ".build-key").unlink()
    assert compare(before, after) == [
        f"only in {before}: lite/.build-key",
        f"only in {after}: new.html",
        "differ: _static/x.png (6 -> 6 bytes)",  # binary: no lines shown
        "differ: index.html (18 -> 18 bytes)",
        "    -<p>b</p>",
        "    +<p>c</p>",
        "2 files in one tree only, 2 files differ, 0 identical",
    ]
    assert main([str(before), str(after)]) == 1


def test_a_long_diff_is_cut_and_counted(tmp_path):
    before = _site(tmp_path / "a", {"p.html": b"".join(b"%d\n" % i for i in range(10))})
    after = _site(tmp_path / "b", {"p.html": b"".join(b"%d!\n" % i for i in range(10))})
    report = compare(before, after, limit=3)
    assert report[1:] == ["    -0", "    -1", "    -2", "    ... 17 more changed lines",
                          "0 files in one tree only, 1 files differ, 0 identical"]
