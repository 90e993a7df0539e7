"""The config file: discovery, defaults, validation with positions, plugins."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopengine.app import (
    CONFIG_ENV,
    DATABASE_ENV,
    find_config,
    load_workspace,
    private_paths,
    read_settings,
)
from loopengine.contract import MAX_COLLECTION_NAME
from loopengine.errors import ContractError
from tests.conftest import SEED_DIR


def _errors(tmp_path: Path, text: str) -> list[str]:
    config = tmp_path / "loopengine.yaml"
    config.write_text(text)
    with pytest.raises(ContractError) as caught:
        load_workspace(config, entry_points=False)
    return [d.format().removeprefix(f"{config}:") for d in caught.value.diagnostics]


def test_no_config_gives_working_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    workspace = load_workspace(entry_points=False)
    assert workspace.settings.file is None
    assert workspace.config.database == "sqlite:///.loopengine/loopengine.db"
    assert workspace.registry.find_skill("log_only") is not None


def test_config_is_found_in_a_parent_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loopengine.yaml").write_text("tools_root: data\n")
    (tmp_path / "loops").mkdir()
    monkeypatch.chdir(tmp_path / "loops")
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    assert find_config() == tmp_path / "loopengine.yaml"


def test_environment_variable_names_the_config_where_none_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "other.yaml"))
    assert find_config() == tmp_path / "other.yaml"


def test_the_nearest_config_wins_over_the_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loopengine.yaml").write_text("tools_root: data\n")
    (tmp_path / "loops").mkdir()
    monkeypatch.chdir(tmp_path / "loops")
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "other.yaml"))
    assert find_config() == tmp_path / "loopengine.yaml"


def test_explicit_path_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "loopengine.yaml").write_text("tools_root: data\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(CONFIG_ENV, "elsewhere.yaml")
    assert find_config(tmp_path / "mine.yaml") == tmp_path / "mine.yaml"


def test_plugins_register_their_skills() -> None:
    workspace = load_workspace(SEED_DIR / "loopengine.yaml", entry_points=False)
    names = {d.name for d in workspace.registry.skills}
    assert {"seo_role_audit", "canonical_check", "seo_role_fix", "seo_role_rollback"} <= names
    assert workspace.env.storage == {"supabase", "redis"}


def test_schema_errors_are_located(tmp_path: Path) -> None:
    assert _errors(tmp_path, "daemon: {port: 99999}\nplugin: []\n") == [
        "1:16: daemon.port: must be ≤ 65535, got 99999",
        "2:1: plugin: unknown key 'plugin'; did you mean 'plugins'?",
    ]


def test_routing_must_name_real_nodes(tmp_path: Path) -> None:
    text = (
        "cluster:\n"
        "  nodes:\n"
        "    OL1: {base_url: 'http://127.0.0.1:11434/v1', model: m}\n"
        "  routing:\n"
        "    simple: [OL1, OL2]\n"
    )
    assert _errors(tmp_path, text) == [
        "5:19: cluster.routing.simple[1]: routing names node 'OL2', which is not under "
        "cluster.nodes; did you mean 'OL1'?"
    ]


def test_storage_schemes_are_checked(tmp_path: Path) -> None:
    assert _errors(tmp_path, "storage: {s3: 's3://bucket'}\n") == [
        "1:15: storage.s3: storage URL scheme 's3' is not supported (known: file, postgres, "
        "postgresql, redis, rediss, sqlite)"
    ]


def test_tracing_settings_are_checked_by_the_schema(tmp_path: Path) -> None:
    text = "tracing:\n  otlp_endpoint: grpc://127.0.0.1:4317\n  sample_ratio: 1.5\n"
    assert _errors(tmp_path, text) == [
        "2:18: tracing.otlp_endpoint: invalid value: expected the pattern "
        "^https?://[^/?#]+/?[^?#]*$",
        "3:17: tracing.sample_ratio: must be ≤ 1, got 1.5",
    ]


def test_a_missing_plugin_file_is_located(tmp_path: Path) -> None:
    (error,) = _errors(tmp_path, "plugins: [./nowhere.py]\n")
    assert error.startswith("1:11: plugins[0]: plugin file './nowhere.py' not found")


def test_a_missing_plugin_module_says_how_to_fix(tmp_path: Path) -> None:
    (error,) = _errors(tmp_path, "plugins: [no_such_module_here]\n")
    assert "install it, or write a path like './no_such_module_here.py'" in error


def test_a_plugin_that_raises_is_reported(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("raise RuntimeError('bad plugin')\n")
    (error,) = _errors(tmp_path, "plugins: [broken.py]\n")
    assert "failed to import: RuntimeError: bad plugin" in error


def test_a_module_plugin_is_imported_from_the_config_folder(tmp_path: Path) -> None:
    (tmp_path / "local_skills_for_test.py").write_text(
        "from loopengine import skill\n\n@skill\ndef local_thing(ctx):\n    return {}\n"
    )
    config = tmp_path / "loopengine.yaml"
    config.write_text("plugins: [local_skills_for_test]\n")
    workspace = load_workspace(config, entry_points=False)
    assert workspace.registry.find_skill("local_thing") is not None


def test_an_unreadable_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match=r"absent\.yaml:1:1: cannot read: No such file"):
        load_workspace(tmp_path / "absent.yaml", entry_points=False)


def test_an_empty_config_means_defaults(tmp_path: Path) -> None:
    config = tmp_path / "loopengine.yaml"
    config.write_text("# nothing yet\n")
    assert load_workspace(config, entry_points=False).config.plugins == []


def test_a_chain_naming_an_unknown_node_is_an_error_at_its_position(tmp_path: Path) -> None:
    (tmp_path / "loopengine.yaml").write_text(
        "cluster:\n"
        "  nodes:\n"
        "    small: {base_url: 'http://127.0.0.1:9/v1', model: m}\n"
        "    big: {base_url: 'http://127.0.0.1:9/v1', model: m}\n"
        "  chain: [small, bgi]\n"
    )
    with pytest.raises(ContractError) as caught:
        load_workspace(tmp_path / "loopengine.yaml", entry_points=False)
    assert str(caught.value).endswith(
        "loopengine.yaml:5:18: cluster.chain[1]: chain names node 'bgi', which is not under "
        "cluster.nodes; did you mean 'big'?"
    )


def test_a_grader_naming_an_unknown_node_is_an_error_at_its_position(tmp_path: Path) -> None:
    (tmp_path / "loopengine.yaml").write_text(
        "cluster:\n"
        "  nodes:\n"
        "    OL1: {base_url: 'http://127.0.0.1:9/v1', model: m}\n"
        "autolearn: {grader: OL2, margin: 1}\n"
    )
    with pytest.raises(ContractError) as caught:
        load_workspace(tmp_path / "loopengine.yaml", entry_points=False)
    assert str(caught.value).endswith(
        "loopengine.yaml:4:21: autolearn.grader: autolearn.grader names node 'OL2', which is "
        "not under cluster.nodes; did you mean 'OL1'?"
    )


def test_the_autolearn_settings_default_to_the_seed(tmp_path: Path) -> None:
    (tmp_path / "loopengine.yaml").write_text("autolearn: {margin: 1}\n")
    autolearn = load_workspace(tmp_path / "loopengine.yaml", entry_points=False).config.autolearn
    assert (autolearn.grader, autolearn.min_samples, autolearn.explore) == ("OL1", 5, 0.1)
    assert autolearn.margin == 1


def test_more_samples_needed_than_the_window_holds_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "loopengine.yaml").write_text("autolearn: {min_samples: 30, window: 20}\n")
    with pytest.raises(ContractError, match="no node could ever be ranked"):
        load_workspace(tmp_path / "loopengine.yaml", entry_points=False)


@pytest.mark.parametrize(
    ("store", "folder"),
    [
        (".loopengine/loopengine.db", ".loopengine"),
        ("state/store.db", "state"),
        ("/srv/data/store.db", "/srv/data"),
        ("store.db", None),
        ("../store.db", None),
    ],
)
def test_the_tools_never_see_the_config_nor_the_store(
    tmp_path: Path, store: str, folder: str | None
) -> None:
    private = private_paths(tmp_path, tmp_path / "loopengine.yaml", Path(store))
    file = (tmp_path / store).resolve()
    files = {file.with_name(file.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")}
    folders = {tmp_path / ".loopengine", *([] if folder is None else [tmp_path / folder])}
    assert set(private) == {tmp_path / "loopengine.yaml", *files, *folders}


def test_without_a_config_nor_a_store_file_only_loopengine_folder_is_private(
    tmp_path: Path,
) -> None:
    assert private_paths(tmp_path, None, None) == (tmp_path / ".loopengine",)


def test_the_private_store_is_the_one_this_process_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loopengine.yaml").write_text("database: sqlite:///state/store.db\n")
    monkeypatch.setenv(DATABASE_ENV, f"sqlite:///{tmp_path / 'elsewhere' / 'run.db'}")
    private = read_settings(tmp_path / "loopengine.yaml").private
    assert tmp_path / "elsewhere" in private
    assert tmp_path / "state" not in private


KNOWLEDGE_NODES = "cluster:\n  nodes:\n    OL1: {base_url: 'http://127.0.0.1:9/v1', model: m}\n"


def test_a_knowledge_collection_defaults_to_keywords_and_800_character_chunks(
    tmp_path: Path,
) -> None:
    (tmp_path / "loopengine.yaml").write_text("knowledge:\n  docs: {sources: ['kb/**/*.md']}\n")
    collection = load_workspace(tmp_path / "loopengine.yaml", entry_points=False).config.knowledge
    docs = collection["docs"]
    assert (docs.chunk.size, docs.chunk.overlap, docs.grader, docs.embeddings) == (
        800,
        100,
        None,
        None,
    )


def test_a_collection_name_is_at_most_the_length_the_skills_take(tmp_path: Path) -> None:
    longest = "d" * MAX_COLLECTION_NAME
    (tmp_path / "loopengine.yaml").write_text(f"knowledge:\n  {longest}: {{sources: [kb]}}\n")
    assert list(
        load_workspace(tmp_path / "loopengine.yaml", entry_points=False).config.knowledge
    ) == [longest]
    [error] = _errors(tmp_path, f"knowledge:\n  {longest}s: {{sources: [kb]}}\n")
    assert error.endswith(
        f": collection name '{longest}s': use letters, digits, '_', '-' and '.' (at most "
        f"{MAX_COLLECTION_NAME}, the first a letter or digit)"
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "knowledge:\n  docs: {sources: [kb], chunks: {size: 10}}\n",
            "2:25: knowledge.docs.chunks: unknown key 'chunks'; did you mean 'chunk'?",
        ),
        (
            "knowledge:\n  docs: {sources: []}\n",
            "2:19: knowledge.docs.sources: needs at least 1 item",
        ),
        (
            "knowledge:\n  docs: {sources: [kb], chunk: {size: 50}}\n",
            "2:39: knowledge.docs.chunk.size: must be ≥ 100, got 50",
        ),
        (
            "knowledge:\n  docs: {sources: [kb, ../private]}\n",
            "2:24: knowledge.docs.sources[1]: source '../private' leaves this file's folder: "
            "keep sources inside it",
        ),
        (
            "knowledge:\n  docs: {sources: [/etc]}\n",
            "2:20: knowledge.docs.sources[0]: source '/etc' is absolute: write it relative to "
            "this file's folder",
        ),
        (
            "knowledge:\n  docs/all: {sources: [kb]}\n",
            "2:3: knowledge.docs/all: collection name 'docs/all': use letters, digits, '_', '-' "
            "and '.' (at most 100, the first a letter or digit)",
        ),
        (
            KNOWLEDGE_NODES + "knowledge:\n  docs: {sources: [kb], grader: OL2}\n",
            "5:33: knowledge.docs.grader: grader names node 'OL2', which is not under "
            "cluster.nodes; did you mean 'OL1'?",
        ),
        (
            "knowledge:\n  docs: {sources: [kb], embeddings: {node: OL1, model: e}}\n",
            "2:44: knowledge.docs.embeddings.node: embeddings.node names node 'OL1', which is not "
            "under cluster.nodes",
        ),
        (
            "knowledge:\n  docs: {sources: [kb], web: {url: 'https://search.example/s'}}\n",
            "2:36: knowledge.docs.web.url: web search search.example:443 is not listed under "
            "actions.http.allow: list 'search.example:443' there to send to it",
        ),
        (
            "actions: {http: {allow: ['127.0.0.1:8080']}}\n"
            "knowledge:\n  docs: {sources: [kb], web: {url: 'http://127.0.0.1:8081/s'}}\n",
            "3:36: knowledge.docs.web.url: web search 127.0.0.1:8081 is not listed under "
            "actions.http.allow: list '127.0.0.1:8081' there to send to it",
        ),
        (
            "knowledge:\n  docs: {sources: [kb], web: {url: 'ftp://search.example/'}}\n",
            "2:36: knowledge.docs.web.url: invalid value: expected the pattern ^https?://[^/?#]",
        ),
    ],
)
def test_a_bad_knowledge_collection_is_one_located_line(
    tmp_path: Path, text: str, error: str
) -> None:
    assert _errors(tmp_path, text) == [error]


def test_a_web_search_whose_host_is_allowed_is_taken(tmp_path: Path) -> None:
    (tmp_path / "loopengine.yaml").write_text(
        "actions: {http: {allow: ['search.example']}}\n"
        "knowledge:\n  docs: {sources: [kb], web: {url: 'https://search.example/s?format=json'}}\n"
    )
    web = load_workspace(tmp_path / "loopengine.yaml", entry_points=False).config.knowledge["docs"]
    assert web.web is not None
    assert (web.web.url, web.web.param, web.web.timeout_s) == (
        "https://search.example/s?format=json",
        "q",
        10,
    )


def test_a_chunk_overlap_as_long_as_its_size_is_an_error_at_its_position(tmp_path: Path) -> None:
    (tmp_path / "loopengine.yaml").write_text(
        "knowledge:\n  docs: {sources: [kb], chunk: {size: 300, overlap: 300}}\n"
    )
    with pytest.raises(ContractError) as caught:
        _ = load_workspace(tmp_path / "loopengine.yaml", entry_points=False).config
    assert str(caught.value).endswith(
        "loopengine.yaml:2:32: knowledge.docs.chunk: overlap 300 is not under size 300: a chunk "
        "would repeat all of the one before it"
    )
