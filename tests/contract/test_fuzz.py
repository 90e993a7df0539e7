"""Fuzz: generated loop documents and expressions are refused only with ``LoopEngineError``.

Every input comes from a seeded ``random.Random``, so a failure names an input that replays.
Documents are the loops under ``loops/``, ``examples/`` and ``tests/contract/invalid/`` mutated
as text (characters, lines, indentation, YAML's special tokens, the parser's bounds) and as data
(a value, key or item replaced, then dumped again as YAML or JSON), and loaded from a file as
``loopengine validate`` and ``run`` load one. Expressions are terms of a grammar of the expression
language, most of them then mutated, compiled alone and inside a ``${ }`` template. Both run in
child processes, one per core, so that a crash of a C extension (libyaml, pydantic-core) fails
the test naming its input instead of ending the run.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import random
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import islice
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnContext, SpawnProcess
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Any, Protocol, TypeVar

import yaml

from loopengine.builtins import builtin_registry
from loopengine.contract import MAX_BYTES, LoopLoader, find_loop_files, loop_schema, parse_yaml
from loopengine.contract.checks import Env
from loopengine.errors import ContractError, LoopEngineError
from loopengine.expr import compile_expression, compile_template
from loopengine.skills import load_plugin
from tests.conftest import ROOT, SEED_DIR

DOCUMENTS = 20_000
EXPRESSIONS = 80_000
"""With the documents, 100,000 inputs."""
WORKERS = 2
"""Child processes sharing the inputs of a test, each taking every ``WORKERS``-th one."""
RARE = 0.02
"""How often a costly mutation (an alias bomb, a file of 300 KiB or over ``MAX_BYTES``) is made."""
HANG = 600.0
"""Seconds after which a child is taken as stuck on its current input (not a timing test)."""

HERE = Path(__file__).parent
SEEDS = [
    path.read_text()
    for path in find_loop_files([ROOT / "loops", ROOT / "examples", HERE / "invalid"])
]
CONTEXT = {
    "items": [{"a": 1, "x": "p"}, {"a": "2", "x": None}, {"a": [3], "x": {"b": 4.5}}],
    "pages": {"count": 3},
    "violations": {"count": 0, "before": 2, "after": 1},
    "since_last_run": 90.0,
    "ts": "2024-01-01T00:00:00",
}

NAMES = ("a", "x", "items", "pages.count", "violations.count", "input.message", "ts", "@", "*")
LITERALS = (
    *("0", "-1", "3.5", "1_000", "1e3", "-2.5E-3", "99999999999999999999999", "5%", "0.5%"),
    *("6h", "90s", "500ms", "1h30m", "2d", "3w", "6_hours_ago", "1.5_days_ago", "since_last_run"),
    *("true", "false", "null", "now()", "[]", "{}", "`1`", "`true`", "`[1,2]`", "``", "_", "Ünï"),
    *("'text'", "'it\\'s'", "''", '"quoted name"', '`"x"`', '`{"a": 1}`', "`not json`"),
)
FORMS = (
    *("¤==¤", "¤!=¤", "¤<¤", "¤<=¤", "¤>¤", "¤>=¤", "¤&&¤", "¤||¤", "!¤", "(¤)", "¤|¤", "¤.¤"),
    *("¤[0]", "¤[-1]", "¤[1:2]", "¤[::-1]", "¤[*]", "¤[]", "¤[?¤]", "¤[*].¤", "[¤,¤]", "&¤"),
    *("{a:¤,b:¤}", "count(¤)", "age(¤)", "matches(¤,¤)", "length(¤)", "sum(¤)", "avg(¤)"),
    *("sort_by(¤,&¤)", "max_by(¤,&¤)", "map(&¤,¤)", "to_number(¤)", "contains(¤,¤)", "join(¤,¤)"),
    *("not_null(¤,¤,¤)", "no_such_function(¤)", "now(¤)", "¤-¤", "¤+¤", "¤*¤", "¤%¤", "¤??¤"),
    *("age(¤) > ¤", "last_run < ¤", "¤ and ¤", "not ¤", "¤ <> ¤", "¤===¤"),
)
TOKENS = (
    *("(", ")", "[", "]", "{", "}", ".", ",", ":", "|", "&", "!", "<", ">", "=", "?", "*", "@"),
    *("`", "'", '"', "-", "+", "%", "$", "\\", "[?", "||", "&&", "==", "${", "$${"),
    *("secret.", "now()", "age(", "count(", "matches(", "6h", "5%", "_ago", "é", "🙂"),
    *(" ", "\t", "\n", "\x00", "\u2028"),
)
YAML_TOKENS = (
    *("&a ", "*a", "? ", "---\n", "...\n", "{", "}", "[", "]", ", ", "#", "'", '"', "\\", "~"),
    *("null", "yes", "on", ".inf", ".nan", "0x1F", "0o17", "0b101", "12:30:00", "!custom "),
    *("2001-12-14t21:59:43.10-05:00", "!!set ", "!!omap ", "!!str ", "!!int ", "!!float "),
    *("<<: *a", "<<: [*a, *b]", "<<: 1", "!!python/object:os.system ", "!!binary aGVsbG8=", ": "),
    *("!<tag:yaml.org,2002:int> ", "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", "- ", "|\n", ">-\n"),
    *("\t", "\r\n", "\x00", "\x85", "\ufeff", "\u2028", "é", "🙂", "1" * 70, "x" * 5_000),
    *("${ ", "${ a ", "$${ a }", "${ secret.TOKEN }", "${ secret.a.b }", "${ {a: b} }"),
)
SCALARS = (
    *(None, True, False, 0, -1, 0.5, -0.0, 1e308, float("inf"), float("-inf"), float("nan")),
    *(10**18, 10**19, 10**63, 10**64, 10**65, 10**300, "x" * 10_000),
    *("", " ", "\x00", "é🙂", "a: b", "- x", "*a", "&a", "on", "yes", "null", "true", "1_000"),
    *("1h", "6h", "90s", "0s", "-1h", "5%", "*/2 * * * * *", "0 2 * * *", "61 25 * * *"),
)


def _expression(rng: random.Random, depth: int = 0) -> str:
    """A term of the grammar, up to four forms deep: mostly well formed, not always typed well."""
    if depth > 3 or rng.random() < 0.35:
        return rng.choice(rng.choice((NAMES, LITERALS)))
    holes = rng.choice(FORMS).split("¤")
    children = [_expression(rng, depth + 1) for _ in holes[1:]]
    return holes[0] + "".join(child + rest for child, rest in zip(children, holes[1:], strict=True))


def _mutated(text: str, rng: random.Random) -> str:
    """``text`` after up to three edits: a character dropped, a token put in, a slice doubled,
    the end cut, the halves swapped, or the whole wrapped in (possibly unbalanced) parentheses."""
    for _ in range(rng.randrange(4)):
        at = rng.randrange(len(text) + 1)
        edit = rng.randrange(6)
        if edit == 0:
            text = text[:at] + text[at + 1 :]
        elif edit == 1:
            text = text[:at] + rng.choice(TOKENS) + text[at:]
        elif edit == 2:
            end = rng.randrange(at, min(at + 40, len(text)) + 1)
            text = text[:end] + text[at:end] + text[end:]
        elif edit == 3:
            text = text[:at]
        elif edit == 4:
            text = text[at:] + text[:at]
        else:
            depth = 400 if rng.random() < 0.05 else rng.choice((2, 30))
            text = "(" * depth + text + ")" * rng.choice((depth, depth - 1, 0))
    return text


def _expressions(count: int) -> Iterator[str]:
    """``count`` distinct expressions (the compiler caches, so a repeat would test nothing)."""
    rng = random.Random("expressions")
    seen: set[str] = set()
    while len(seen) < count:
        source = _expression(rng)
        if rng.random() < 2 / 3:
            source = _mutated(source, rng)
        if source not in seen:
            seen.add(source)
            yield source


def _data(text: str) -> Any:
    """The data of a seed, or None when it is no YAML the loader reads (an invalid example)."""
    try:
        return parse_yaml(text, "seed.yaml").data
    except ContractError:
        return None


def _words(node: Any) -> Iterator[str]:
    """Every key and short string of a schema or a loop, so that mutations speak the contract."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _words(value)
    elif isinstance(node, list):
        for item in node:
            yield from _words(item)
    elif isinstance(node, str) and len(node) < 40:
        yield node


LOOPS = [data for data in map(_data, SEEDS) if isinstance(data, dict)]
WORDS = sorted({*_words(loop_schema()), *_words(LOOPS)})


def _line_edit(text: str, rng: random.Random) -> str:
    """One line dropped, doubled, moved, re-indented, or taken from another seed."""
    lines = text.split("\n")
    at = rng.randrange(len(lines))
    line = lines[at]
    edit = rng.randrange(7)
    if edit == 0:
        del lines[at]
    elif edit == 1:
        lines.insert(at, line)
    elif edit == 2:
        lines.insert(rng.randrange(len(lines)), lines.pop(at))
    elif edit == 3:
        lines[at] = " " * rng.randrange(1, 5) + line
    elif edit == 4:
        lines[at] = line.lstrip(" ")
    elif edit == 5:
        lines[at] = line.replace("  ", "\t", 1)
    else:
        lines[at] = rng.choice(rng.choice(SEEDS).split("\n"))
    return "\n".join(lines)


def _token_edit(text: str, rng: random.Random) -> str:
    """A YAML token, a contract word or any character put in, or a value made an expression."""
    at = rng.randrange(len(text) + 1)
    edit = rng.randrange(4)
    if edit == 0:
        return text[:at] + rng.choice(YAML_TOKENS) + text[at:]
    if edit == 1:
        return text[:at] + rng.choice(WORDS) + text[at:]
    if edit == 2:
        character = chr(rng.choice((rng.randrange(128), rng.randrange(0x110000))))
        return text[:at] + character + text[at:]
    start = text.find(": ", at)
    end = text.find("\n", start)
    if start < 0 or end < 0:
        return text
    value = json.dumps(_mutated(_expression(rng), rng), ensure_ascii=rng.random() < 0.5)
    return text[: start + 2] + value + text[end:]


def _bound_edit(text: str, rng: random.Random) -> str:
    """The document pushed at a bound of the parser (nesting, size, aliases), cut, or prefixed;
    rarely past the costly ones (an alias bomb, a large file)."""
    edit = rng.randrange(5)
    if edit == 0:
        depth = rng.choice((10, 62, 63, 64, 65, 200, 5_000))
        return f"{text}\nextra: {rng.choice(('[', '{a: ', '- ')) * depth}"
    if edit == 1:
        doublings = 30 if rng.random() < RARE else rng.randrange(2, 10)
        aliases = (f"k{n}: &k{n} [*k{n - 1}, *k{n - 1}]" for n in range(1, doublings))
        return "\n".join((text, "k0: &k0 [x]", *aliases))
    if edit == 2 and rng.random() < RARE:
        return rng.choice((text[:1_000] * 300, text[:MAX_BYTES] + "#" * MAX_BYTES))
    if edit == 2:
        return text * 2
    if edit == 3:
        return text[: rng.randrange(len(text) + 1)]
    return rng.choice(("\ufeff", "%YAML 1.2\n---\n", "--- !!map\n", "Loop:\n", "- ")) + text


def _text_document(rng: random.Random) -> str:
    text = rng.choice(SEEDS)
    edits = (_line_edit, _token_edit, _line_edit, _token_edit, _bound_edit)
    for _ in range(rng.randrange(1, 5)):
        text = rng.choice(edits)(text, rng)
    return text


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A random value of any JSON-like type, at times at a bound (size, depth, digits)."""
    kind = rng.randrange(9 if depth < 3 else 5)
    if kind == 0:
        return rng.choice(SCALARS)
    if kind == 1:
        return rng.choice(WORDS)
    if kind == 2:
        return rng.choice((rng.randrange(-(10**6), 10**6), rng.uniform(-1e9, 1e9)))
    if kind == 3:
        return _mutated(_expression(rng), rng)
    if kind == 4:
        return "${ " + _mutated(_expression(rng), rng) + " }"
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 6:
        return {rng.choice(WORDS): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    if kind == 7:
        return rng.choice(LOOPS)
    nested: Any = rng.choice(WORDS)
    for _ in range(rng.choice((5, 40, 60, 63, 64, 70))):
        nested = rng.choice(([nested], {"a": nested}))
    return nested


def _edit_data(node: Any, rng: random.Random) -> Any:
    """``node`` with one value, key or item replaced somewhere below it (a copy: seeds stay)."""
    if isinstance(node, dict) and node and rng.random() < 0.7:
        key = rng.choice(list(node))
        return {**node, key: _edit_data(node[key], rng)}
    if isinstance(node, list) and node and rng.random() < 0.7:
        index = rng.randrange(len(node))
        return [*node[:index], _edit_data(node[index], rng), *node[index + 1 :]]
    if isinstance(node, dict) and node and rng.random() < 0.5:
        key = rng.choice(list(node))
        edited = {k: v for k, v in node.items() if k != key}
        if rng.random() < 0.5:
            edited[rng.choice(WORDS)] = node[key]
        return edited
    if isinstance(node, list) and rng.random() < 0.5:
        return [*node, rng.choice([*node, _value(rng)])]
    if isinstance(node, dict) and rng.random() < 0.5:
        return {**node, rng.choice(WORDS): _value(rng)}
    return _value(rng)


def _data_document(rng: random.Random) -> str:
    data = rng.choice(LOOPS)
    for _ in range(rng.randrange(1, 4)):
        data = _edit_data(data, rng)
    if rng.random() < 0.3:
        return json.dumps(data, indent=rng.choice((None, 2)), ensure_ascii=rng.random() < 0.5)
    return yaml.dump(  # shared values become anchors and aliases
        data,
        Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
        sort_keys=False,
        allow_unicode=rng.random() < 0.5,
        default_flow_style=rng.choice((False, None, True)),
        width=rng.choice((20, 80, 1_000)),
    )


def _document(index: int) -> bytes:
    """File ``index``: a loop mutated as text, as data, or as data then as text; a few of the
    files then have a byte overwritten (lone surrogates from ``chr`` are not UTF-8 either)."""
    rng = random.Random(f"document {index}")
    kind = rng.randrange(5)
    text = _text_document(rng) if kind < 2 else _data_document(rng)
    if kind == 4:
        text = _token_edit(text, rng)
    raw = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.05:
        at = rng.randrange(len(raw) + 1)
        raw = raw[:at] + bytes([rng.randrange(256)]) + raw[at + 1 :]
    return raw


Given = TypeVar("Given", str, bytes)


@dataclass(frozen=True, slots=True)
class Crash:
    """An exception other than ``LoopEngineError``, with the input that raised it."""

    kind: str
    where: str
    given: str | bytes
    trace: str

    def __str__(self) -> str:
        return f"{self.kind} at {self.where}\n  input: {self.given!r:.300}\n{self.trace}"


def _crash(check: Callable[[Given], object], given: Given) -> Crash | None:
    """None when ``check(given)`` returns or raises ``LoopEngineError``; else what escaped it."""
    try:
        check(given)
    except LoopEngineError:
        return None
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno}"
        trace = "".join(traceback.format_list(frames[-3:]))
        return Crash(f"{type(exc).__name__}: {exc!s:.200}", where, given, trace)
    return None


def _distinct(crashes: list[Crash]) -> str:
    """One crash of each kind (exception type and the line raising it)."""
    kinds: dict[tuple[str, str], Crash] = {}
    for crash in crashes:
        kinds.setdefault((crash.kind.split(":")[0], crash.where), crash)
    return f"{len(crashes)} crashes, {len(kinds)} distinct:\n" + "\n".join(map(str, kinds.values()))


def _loaders() -> tuple[LoopLoader, LoopLoader]:
    """Loaders knowing every skill the seeds name, so that mutations reach the skill checks:
    one checking only (``validate``), one building the loop too (``run``)."""
    registry = builtin_registry()
    load_plugin("./seo_skills.py", SEED_DIR, registry)
    load_plugin("./cache_skills.py", ROOT / "examples" / "quickstart", registry)
    load_plugin("./test_skills.py", HERE / "plugins", registry)
    env = Env(registry, frozenset({"supabase", "redis"}))
    return LoopLoader(env, build=False), LoopLoader(env)


def _validate(loaders: tuple[LoopLoader, LoopLoader], file: Path, document: bytes) -> None:
    """What ``loopengine validate`` and ``run`` do with a file: check it, print and serialise
    each diagnostic, take the ``ContractError`` of an invalid one; a valid one is built too (as
    ``run`` does), and must build: the checks find every error the model would."""
    checking, building = loaders
    file.write_bytes(document)
    report = checking.load_file(file)
    for diagnostic in report.diagnostics:
        json.dumps([diagnostic.format(), diagnostic.as_json()])
    if not report.ok:
        report.valid()
    try:
        built = building.load_file(file)
    except LoopEngineError as exc:
        raise AssertionError(f"the checks pass what building refuses: {exc!r}") from exc
    assert built.ok, f"the checks pass what the model refuses: {built.errors}"
    assert built.loop is not None
    assert built.loop.id == report.loop_id


class Share(Protocol):
    """Checks one worker's share of the inputs, noting in ``reached`` the index of each before
    trying it; gives how many it checked, and the crashes."""

    def __call__(self, worker: int, reached: Synchronized[int]) -> tuple[int, list[Crash]]: ...


def _check_each(
    check: Callable[[Given], object],
    inputs: Iterable[tuple[int, Given]],
    reached: Synchronized[int],
) -> tuple[int, list[Crash]]:
    crashes: list[Crash] = []
    fed = 0
    for index, given in inputs:
        reached.value = index
        fed += 1
        crash = _crash(check, given)
        if crash is not None:
            crashes.append(crash)
    return fed, crashes


def _validate_share(
    folder: Path, worker: int, reached: Synchronized[int]
) -> tuple[int, list[Crash]]:
    validate = partial(_validate, _loaders(), folder / f"{worker}.yaml")
    indices = range(worker, DOCUMENTS, WORKERS)
    return _check_each(validate, ((index, _document(index)) for index in indices), reached)


def _compile_and_evaluate(source: str) -> None:
    """Compile ``source`` alone, evaluating it if it compiles, then inside a template."""
    with contextlib.suppress(LoopEngineError):
        compile_expression(source).evaluate(CONTEXT)
    compile_template(f"x ${{{source}}} y").render(CONTEXT, {})


def _compile_share(worker: int, reached: Synchronized[int]) -> tuple[int, list[Crash]]:
    inputs = islice(enumerate(_expressions(EXPRESSIONS)), worker, None, WORKERS)
    return _check_each(_compile_and_evaluate, inputs, reached)


def _expression_at(index: int) -> str:
    return next(islice(_expressions(EXPRESSIONS), index, None))


def _child(share: Share, worker: int, reached: Synchronized[int], results: Connection) -> None:
    results.send(share(worker, reached))


@dataclass(frozen=True)
class _Worker:
    """A child process checking one share of the inputs, so that both cores work and a crash
    of the interpreter fails the test instead of ending the run."""

    process: SpawnProcess
    reached: Synchronized[int]
    results: Connection

    @classmethod
    def start(cls, context: SpawnContext, share: Share, worker: int) -> _Worker:
        reached = context.Value("q", -1)
        receiving, sending = context.Pipe(duplex=False)
        process = context.Process(target=_child, args=(share, worker, reached, sending))
        process.start()
        sending.close()  # so that a dead child reads as end of file
        return cls(process, reached, receiving)

    def outcome(self, replay: Callable[[int], object]) -> tuple[int, list[Crash]]:
        """The share's count and crashes; ``AssertionError`` naming the input it died on."""
        with contextlib.suppress(EOFError):  # the child died
            if self.results.poll(HANG):
                checked: tuple[int, list[Crash]] = self.results.recv()
                return checked
        self.process.join(timeout=1)
        code, index = self.process.exitcode, self.reached.value
        state = "is stuck" if code is None else f"died (exit code {code})"
        where = f"on input {index}: {replay(index)!r:.500}" if index >= 0 else "at start"
        raise AssertionError(f"checking {state} {where}")

    def stop(self) -> None:
        self.process.kill()
        self.process.join()
        self.results.close()


def _in_children(
    share: Share, replay: Callable[[int], object], done: str
) -> tuple[int, list[Crash]]:
    """Every share checked in its own child process: the total count and all the crashes."""
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    workers = [_Worker.start(context, share, worker) for worker in range(WORKERS)]
    try:
        outcomes = [worker.outcome(replay) for worker in workers]
    finally:
        for worker in workers:
            worker.stop()
    fed = sum(count for count, _ in outcomes)
    print(f"\n{fed:,} {done} in {time.perf_counter() - started:.1f} s")
    return fed, [crash for _, found in outcomes for crash in found]


def test_generated_documents_fail_validation_only_with_loopengine_errors(tmp_path: Path) -> None:
    fed, crashes = _in_children(
        partial(_validate_share, tmp_path), _document, "documents validated"
    )
    assert fed == DOCUMENTS
    assert not crashes, _distinct(crashes)


def test_generated_expressions_fail_only_with_loopengine_errors() -> None:
    fed, crashes = _in_children(_compile_share, _expression_at, "expressions compiled")
    assert fed == EXPRESSIONS
    assert not crashes, _distinct(crashes)
