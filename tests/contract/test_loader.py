"""Loading loop files: the seed verbatim, bare mappings, all errors at once, folders, ids."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from loopengine.contract import LoadReport, LoopLoader
from loopengine.expr import Expression
from tests.conftest import MINIMAL, SEED_LOOP


def test_seed_example_loads_verbatim(loader: LoopLoader) -> None:
    report = loader.load_file(SEED_LOOP)
    assert report.ok, [d.format() for d in report.diagnostics]
    assert report.loop is not None
    assert report.loop.id == "seo_audit_loop"


def test_seed_example_keeps_every_phase(loader: LoopLoader) -> None:
    report = loader.load_file(SEED_LOOP)
    assert report.loop is not None
    spec = report.loop.spec
    phases = [
        spec.detect,
        spec.analyze,
        spec.decide,
        spec.act,
        spec.validate_,
        spec.learn,
        spec.store,
    ]
    assert all(phase is not None for phase in phases)


def test_seed_expressions_are_compiled(loader: LoopLoader) -> None:
    report = loader.load_file(SEED_LOOP)
    assert report.loop is not None
    assert report.loop.spec.detect is not None
    condition = report.loop.spec.detect.conditions[0].expression
    assert isinstance(condition, Expression)
    assert condition.holds({"pages": {"count": 3}})


def test_a_bare_mapping_loads(load: Callable[[str], LoadReport]) -> None:
    report = load(MINIMAL)
    assert report.ok
    assert report.loop is not None
    assert report.loop.id == "minimal"


def test_loop_root_with_other_keys_is_an_error(load: Callable[[str], LoadReport]) -> None:
    report = load("Loop:\n  id: x\n  trigger: {type: manual}\nextra: 1\n")
    assert [d.format() for d in report.errors] == [
        "loop.yaml:4:1: extra: unknown key 'extra' beside 'Loop:'; move it under Loop:"
    ]


def test_schema_and_semantic_errors_are_reported_together(
    load: Callable[[str], LoadReport],
) -> None:
    report = load(
        """\
        id: both
        trigger: {type: manual}
        durability: sometimes
        decide:
          fallback_action: no_such_action
        """
    )
    assert [(d.line, d.path) for d in report.errors] == [
        (3, ("durability",)),
        (5, ("decide", "fallback_action")),
    ]


def test_version_is_the_hash_of_the_file(load: Callable[[str], LoadReport]) -> None:
    first, second = load(MINIMAL), load(MINIMAL + "name: renamed\n")
    assert first.loop is not None
    assert second.loop is not None
    assert len(first.loop.version) == 64
    assert first.loop.version != second.loop.version


def test_a_list_at_the_top_is_an_error(load: Callable[[str], LoadReport]) -> None:
    report = load("- id: x\n")
    assert [d.message for d in report.errors] == ["expected a mapping of keys at the top, got list"]


def test_an_empty_file_is_an_error(load: Callable[[str], LoadReport]) -> None:
    report = load("")
    assert [d.message for d in report.errors] == [
        "expected a mapping of keys at the top, got nothing"
    ]


def test_a_file_that_is_not_utf8_is_an_error(loader: LoopLoader, tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("id: x\nname: caf\xe9\n".encode("latin-1"))
    report = loader.load_file(path)
    assert [(d.line, d.message) for d in report.errors] == [
        (2, "not UTF-8 text (byte 15): save the file as UTF-8")
    ]


def test_a_missing_file_is_an_error(loader: LoopLoader, tmp_path: Path) -> None:
    report = loader.load_file(tmp_path / "gone.yaml")
    assert report.errors[0].message.startswith("cannot read")


def test_folders_are_searched_recursively_and_hidden_ones_skipped(
    loader: LoopLoader, tmp_path: Path
) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "a.yaml").write_text(MINIMAL.replace("minimal", "a"))
    (tmp_path / "nested" / "b.yml").write_text(MINIMAL.replace("minimal", "b"))
    (tmp_path / ".hidden" / "c.yaml").write_text("not: a loop")
    (tmp_path / "notes.txt").write_text("ignored")
    reports = loader.load_paths([tmp_path])
    assert sorted(r.loop.id for r in reports if r.loop) == ["a", "b"]


def test_a_loop_id_used_twice_is_an_error_on_the_second_file(
    loader: LoopLoader, tmp_path: Path
) -> None:
    (tmp_path / "a.yaml").write_text(MINIMAL)
    (tmp_path / "b.yaml").write_text("# second\n" + MINIMAL)
    first, second = loader.load_paths([tmp_path])
    assert first.ok
    assert [d.format() for d in second.errors] == [
        f"{tmp_path / 'b.yaml'}:2:5: id: loop id 'minimal' is already used by "
        f"{tmp_path / 'a.yaml'}:1:5; ids must be unique in a loops folder (rename one of them)"
    ]


def test_warnings_do_not_make_a_loop_invalid(load: Callable[[str], LoadReport]) -> None:
    report = load(MINIMAL + "store:\n  artifacts:\n    - {type: log, name: l, storage: s3}\n")
    assert report.ok
    assert [d.level.value for d in report.diagnostics] == ["warning"]


def test_a_param_a_built_in_source_does_not_take_is_an_error_at_load(
    load: Callable[[str], LoadReport],
) -> None:
    report = load(
        """
        id: src
        trigger: {type: manual}
        detect:
          sources:
            - {type: metric, name: cpu, params: {window: 5}}
            - {type: database, name: pages, params: {database: default}}
        """
    )
    assert [d.message for d in report.errors] == ["a metric source takes no param 'window'"]


SECRETS = """\
root:$6$saltsalt$Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4:19700:0:99999:7:::
daemon:*:19700:0:99999:7:::
token: sk-live-0123456789abcdef0123456789abcdef
"""


def test_a_link_out_of_the_folder_is_refused_unread(loader: LoopLoader, tmp_path: Path) -> None:
    (tmp_path / "secrets").write_text(SECRETS)
    folder = tmp_path / "loops"
    folder.mkdir()
    (folder / "inside.yaml").write_text(MINIMAL)
    (folder / "linked.yaml").symlink_to(folder / "inside.yaml")
    (folder / "leak.yaml").symlink_to(tmp_path / "secrets")
    inside, leak, linked = loader.load_paths([folder])
    assert [d.format() for d in leak.errors] == [
        f"{folder / 'leak.yaml'}:1:1: a link to {tmp_path / 'secrets'}, outside {folder}: not read "
        "(move the file into the folder, or link to a file inside it)"
    ]
    assert inside.ok
    assert [d.message for d in linked.errors] == [
        f"loop id 'minimal' is already used by {folder / 'inside.yaml'}:1:5; ids must be unique "
        "in a loops folder (rename one of them)"
    ]


def test_an_invalid_file_names_its_keys_cut_short_and_never_its_values(
    loader: LoopLoader, tmp_path: Path
) -> None:
    (tmp_path / "f.yaml").write_text(
        SECRETS + "id: Sk-Live-0123456789\nconcurrency: sk-live-0123\ndurability: [sk-live]\n"
    )
    shown = "\n".join(d.format() for d in loader.load_file(tmp_path / "f.yaml").diagnostics)
    assert "unknown key 'root:$6$saltsalt$Zm9vYm…'" in shown
    assert "unknown key 'daemon:*:19700:0:99999:…'" in shown
    assert "0123" not in shown
    assert "Zm9vYmFyYmF6" not in shown
