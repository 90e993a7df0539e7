"""A collection's files: found from its sources, bounded, never through a link out of the
config's folder, and read by format."""

from __future__ import annotations

import builtins
import os
import re
from pathlib import Path
from typing import Any

import pytest

from loopengine.knowledge import _sources
from loopengine.knowledge._formats import Block, Unreadable
from loopengine.knowledge._sources import LeftOut, Skipped, SourceFile, find_files, read_blocks


def _tree(base: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)


def _names(base: Path, sources: list[str]) -> list[str]:
    return [file.name for file in find_files(base, sources).files]


def test_globs_and_folders_name_files_once_in_order(tmp_path: Path) -> None:
    _tree(tmp_path, {"kb/a.md": "", "kb/deep/b.md": "", "kb/c.txt": "", "manuals/m.html": ""})
    assert _names(tmp_path, ["kb/**/*.md", "manuals/", "kb/a.md"]) == [
        "kb/a.md",
        "kb/deep/b.md",
        "manuals/m.html",
    ]


def test_a_folder_gives_its_files_of_known_formats_but_not_hidden_ones(tmp_path: Path) -> None:
    _tree(tmp_path, {"docs/a.md": "", "docs/b.png": "", "docs/.git/c.md": "", "docs/.d.md": ""})
    assert _names(tmp_path, ["docs"]) == ["docs/a.md"]


def test_a_file_named_in_an_unknown_format_and_a_source_naming_nothing_are_reported(
    tmp_path: Path,
) -> None:
    _tree(tmp_path, {"logo.png": ""})
    found = find_files(tmp_path, ["logo.png", "missing/**/*.md"])
    assert found.files == ()
    assert list(found.skipped) == [
        Skipped("logo.png", "not Markdown, text, HTML or PDF"),
        Skipped("missing/**/*.md", "names no file"),
    ]


def test_a_link_out_of_the_config_folder_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _tree(outside, {"secret.md": "password"})
    base = tmp_path / "project"
    _tree(base, {"kb/ok.md": "fine"})
    (base / "kb" / "leak.md").symlink_to(outside / "secret.md")
    (base / "kb" / "folder").symlink_to(outside, target_is_directory=True)
    found = find_files(base, ["kb/**/*.md", "kb/folder/secret.md"])
    assert [file.name for file in found.files] == ["kb/ok.md"]
    assert {skipped.name for skipped in found.skipped} == {"kb/leak.md", "kb/folder/secret.md"}
    assert {skipped.reason for skipped in found.skipped} == {
        "a link out of the config's folder, not followed"
    }


def test_a_link_inside_the_config_folder_is_followed(tmp_path: Path) -> None:
    _tree(tmp_path, {"kb/real.md": "x"})
    (tmp_path / "kb" / "alias.md").symlink_to(tmp_path / "kb" / "real.md")
    assert _names(tmp_path, ["kb"]) == ["kb/alias.md", "kb/real.md"]


def test_a_link_that_loops_is_found_and_unreadable(tmp_path: Path) -> None:
    _tree(tmp_path, {"kb/a.md": "x"})
    (tmp_path / "kb" / "loop.md").symlink_to(tmp_path / "kb" / "loop.md")
    assert _names(tmp_path, ["kb"]) == ["kb/a.md", "kb/loop.md"]
    with pytest.raises(Unreadable, match=r"^cannot read: Too many levels of symbolic links$"):
        _read(tmp_path / "kb" / "loop.md")


def test_a_collection_holds_at_most_max_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sources, "MAX_FILES", 2)
    _tree(tmp_path, {f"kb/{n}.md": "" for n in range(4)})
    found = find_files(tmp_path, ["kb"])
    assert len(found.files) == 2
    assert list(found.skipped) == [Skipped("kb", "more than 2 files: the rest left out")]


def _outside(tmp_path: Path) -> Path:
    """A config folder ``project`` beside a folder ``outside`` of 20 Markdown files."""
    _tree(tmp_path / "outside", {f"{n}.md": "secret" for n in range(20)})
    base = tmp_path / "project"
    _tree(base, {"kb/ok.md": "fine"})
    return base


@pytest.mark.parametrize("source", ["linked", "linked/", "*ked", "l*/"])
def test_a_link_to_a_folder_out_of_the_config_folder_is_not_walked(
    tmp_path: Path, source: str
) -> None:
    base = _outside(tmp_path)
    (base / "linked").symlink_to(tmp_path / "outside", target_is_directory=True)
    found = find_files(base, [source])
    assert found.files == ()
    assert list(found.skipped) == [
        Skipped("linked", "a link out of the config's folder, not followed")
    ]


def test_a_glob_never_enters_a_linked_folder(tmp_path: Path) -> None:
    base = _outside(tmp_path)
    (base / "kb" / "linked").symlink_to(tmp_path / "outside", target_is_directory=True)
    found = find_files(base, ["kb/*/**/*.md", "kb/**/*.md"])
    assert [file.name for file in found.files] == ["kb/ok.md"]
    assert list(found.skipped) == [
        Skipped("kb/linked", "a link out of the config's folder, not followed")
    ]


def test_a_link_to_a_folder_inside_the_config_folder_is_not_walked(tmp_path: Path) -> None:
    _tree(tmp_path, {"kb/real/a.md": "x"})
    (tmp_path / "alias").symlink_to(tmp_path / "kb" / "real", target_is_directory=True)
    found = find_files(tmp_path, ["alias"])
    assert found.files == ()
    assert list(found.skipped) == [
        Skipped("alias", "a link to a folder, not followed: name its target")
    ]


def test_a_folder_through_a_link_out_of_the_config_folder_is_not_walked(tmp_path: Path) -> None:
    base = _outside(tmp_path)
    (tmp_path / "outside" / "deep").mkdir()
    (base / "linked").symlink_to(tmp_path / "outside", target_is_directory=True)
    found = find_files(base, ["linked/deep"])
    assert list(found.skipped) == [
        Skipped("linked/deep", "a link out of the config's folder, not followed")
    ]


@pytest.mark.parametrize("source", ["../outside", "/etc", "kb/../../outside/*.md"])
def test_a_source_out_of_the_config_folder_is_refused(tmp_path: Path, source: str) -> None:
    found = find_files(_outside(tmp_path), [source])
    assert found.files == ()
    assert list(found.skipped) == [
        Skipped(source, "not in the config's folder: name a path inside it")
    ]


def test_files_left_out_are_listed_up_to_max_skipped_and_the_rest_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sources, "MAX_SKIPPED", 2)
    _tree(tmp_path, {f"img/{n}.png": "" for n in range(5)})
    reason = "not Markdown, text, HTML or PDF"
    assert find_files(tmp_path, ["img/*.png"]).skipped == LeftOut(
        [Skipped("img/0.png", reason), Skipped("img/1.png", reason)], more=3
    )


def _read(path: Path) -> list[Block]:
    digest, blocks = read_blocks(SourceFile(path, path.name), b"salt")
    assert len(digest) == 64
    return blocks()


def test_a_file_over_the_size_cap_is_not_read(tmp_path: Path) -> None:
    huge = tmp_path / "huge.md"
    with huge.open("wb") as file:
        file.truncate(_sources.MAX_FILE_BYTES + 1)  # sparse: nothing written
    with pytest.raises(Unreadable, match=r"33,554,433 bytes, over the 32 MiB a file may be"):
        _read(huge)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary, not text"),
        (b"caf\xe9 au lait", "not UTF-8 text (byte 3)"),
    ],
)
def test_a_binary_or_undecodable_file_is_unreadable(
    tmp_path: Path, data: bytes, reason: str
) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(data)
    with pytest.raises(Unreadable, match=re.escape(reason)):
        _read(path)


def test_a_byte_order_mark_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "bom.md"
    path.write_bytes(b"\xef\xbb\xbf# Title\n\nBody.")
    assert _read(path) == [Block("Title", 1), Block("Body.")]


def test_the_digest_changes_with_the_bytes_and_the_salt(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text("one")
    file = SourceFile(path, "a.md")
    first = read_blocks(file, b"1")[0]
    assert read_blocks(file, b"2")[0] != first
    path.write_text("two")
    assert read_blocks(file, b"1")[0] != first


def _pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` (Helvetica), its cross-reference table computed."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    data, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(data))
        data += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    table = b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    start = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n%s" % (len(objects) + 1, table)
    data += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        start,
    )
    return data


def test_a_pdf_is_read_page_by_page(tmp_path: Path) -> None:
    path = tmp_path / "manual.pdf"
    path.write_bytes(_pdf("Hold the reset button for ten seconds."))
    assert _read(path) == [Block("Hold the reset button for ten seconds.")]


def test_a_damaged_pdf_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\nnothing else")
    with pytest.raises(Unreadable, match=r"^not a readable PDF"):
        _read(path)


def test_without_pypdf_a_pdf_says_how_to_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = builtins.__import__

    def without_pypdf(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pypdf":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_pypdf)
    path = tmp_path / "manual.pdf"
    path.write_bytes(_pdf("x"))
    with pytest.raises(Unreadable, match=r"^a PDF, and pypdf is not installed: pip install pypdf$"):
        _read(path)


def test_an_unreadable_file_says_why(tmp_path: Path) -> None:
    path = tmp_path / "gone.md"
    with pytest.raises(Unreadable, match="cannot read: No such file"):
        _read(path)
    assert not os.path.exists(path)
