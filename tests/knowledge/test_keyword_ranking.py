"""The keyword ranking on SQLite scores the chunks of a query's rarest terms first, and the
others only while they could still rank: it returns what scoring every match returns."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine.store import create_engine, knowledge, migrate
from loopengine.store.knowledge import NARROW_ABOVE, FileChunks, Narrowing, Piece

ROWS = 100_000
WORDS = [f"w{n}" for n in range(300)]
EVERY_MATCH = sa.text(
    "SELECT rowid, -bm25(knowledge_fts, 0.0, 1.0, 1.0) AS score FROM knowledge_fts "
    "WHERE knowledge_fts MATCH :match ORDER BY score DESC, rowid LIMIT :limit"
)


def test_terms_found_nowhere_are_left_out_and_the_others_come_rarest_first() -> None:
    narrowing = Narrowing.of(["common", "absent", "rare"], [30_000, 0, 50], ROWS)
    assert narrowing.terms == ("rare", "common")
    assert narrowing.hits == (50, 30_000)


def test_a_term_adds_at_most_k1_plus_one_times_its_idf_and_an_idf_stays_positive() -> None:
    narrowing = Narrowing.of(["rare", "everywhere"], [50, 90_000], ROWS)
    assert narrowing.ceilings == pytest.approx((2.2 * math.log(99_950.5 / 50.5), 2.2e-6))


def test_a_term_counted_in_more_chunks_than_there_are_adds_next_to_nothing() -> None:
    assert Narrowing.of(["stale"], [12], 10).ceilings == pytest.approx((2.2e-6,))


def test_when_few_chunks_match_every_match_is_scored_at_once() -> None:
    half = NARROW_ABOVE // 2
    assert Narrowing.of(["rare", "common"], [half, half], ROWS).first() == 2


def test_first_come_the_chunks_of_the_rarest_terms_the_others_cannot_outscore() -> None:
    narrowing = Narrowing.of(["rare", "common", "commoner"], [50, 30_000, 40_000], ROWS)
    assert narrowing.first() == 1


def test_the_ranking_ends_when_the_kth_best_beats_all_the_other_terms_could_add() -> None:
    narrowing = Narrowing.of(["rare", "common"], [50, 30_000], ROWS)
    assert narrowing.after(1, narrowing.ceilings[1] + 0.01) is None


def test_else_the_next_pass_adds_the_rarest_terms_that_make_it_the_last() -> None:
    narrowing = Narrowing.of(["a", "b", "c", "d"], [50, 60, 30_000, 40_000], ROWS)
    assert narrowing.after(1, sum(narrowing.ceilings[2:]) + 0.01) == 2


def test_with_fewer_chunks_found_than_wanted_the_next_pass_takes_every_term() -> None:
    narrowing = Narrowing.of(["a", "b", "c"], [50, 30_000, 40_000], ROWS)
    assert narrowing.after(1, None) == 3
    assert narrowing.after(3, None) is None


def _corpus(seed: int) -> list[FileChunks]:
    """3,000 chunks of words drawn by Zipf's law: a few words in most chunks, most in few."""
    draw = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]

    def piece(position: int) -> Piece:
        words = draw.choices(WORDS, weights, k=draw.randint(8, 30))
        return Piece(position, " ".join(draw.choices(WORDS, weights, k=2)), " ".join(words))

    return [
        FileChunks(f"kb/{seed}/{n}.md", str(n), tuple(piece(p) for p in range(100)))
        for n in range(30)
    ]


@pytest.fixture(params=[1, 2], ids=["one collection", "two collections"])
def connection(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Connection]:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.connect() as opened:
        with opened.begin():
            migrate(opened)
            for seed, name in enumerate(["docs", "other"][: request.param]):
                knowledge.replace_files(opened, name, _corpus(seed), now=0.0)
        yield opened
    engine.dispose()


def _queries() -> list[tuple[list[str], int]]:
    """Queries of one of the commonest words and up to four others, each with a ``k``."""
    draw = random.Random(7)
    return [
        (draw.sample(WORDS[:2], 1) + draw.sample(WORDS[2:], draw.randint(1, 4)), k)
        for _ in range(50)
        for k in (1, 5, 20, 100)
    ]


def _every_match(connection: sa.Connection, terms: list[str], k: int) -> list[tuple[int, float]]:
    words = " OR ".join(f'"{term}"' for term in terms)
    arguments = {"match": f'collection_id : "1" AND ({words})', "limit": k}
    return [(row.rowid, row.score) for row in connection.execute(EVERY_MATCH, arguments)]


def _narrowed(connection: sa.Connection, terms: list[str]) -> bool:
    count = sa.text("SELECT count(*) FROM knowledge_fts WHERE knowledge_fts MATCH :term")
    hits = [connection.execute(count, {"term": f'"{term}"'}).scalar_one() for term in terms]
    rows = connection.execute(sa.text("SELECT count(*) FROM knowledge_chunks")).scalar_one()
    narrowing = Narrowing.of(terms, hits, rows)
    return narrowing.first() < len(narrowing.terms)


def test_nearly_all_the_queries_compared_are_narrowed(connection: sa.Connection) -> None:
    queries = _queries()
    assert sum(_narrowed(connection, terms) for terms, _ in queries) > 0.9 * len(queries)


def test_the_ranking_is_what_scoring_every_match_gives(connection: sa.Connection) -> None:
    for terms, k in _queries():
        ranked = knowledge.keyword_ranking(connection, "docs", terms, k)
        expected = _every_match(connection, terms, k)
        assert [hit.id for hit in ranked] == [chunk for chunk, _ in expected], (terms, k)
        assert [hit.score for hit in ranked] == pytest.approx([score for _, score in expected])


def test_a_collection_without_files_finds_none_of_another_collections_chunks(
    tmp_path: Path,
) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.connect() as opened:
        with opened.begin():
            migrate(opened)
            knowledge.replace_files(opened, "other", _corpus(0), now=0.0)
            knowledge.finish_index(opened, "docs", now=0.0)
        assert knowledge.keyword_ranking(opened, "docs", ["w0", "w9"], 5) == []
    engine.dispose()
