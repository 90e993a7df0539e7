"""The model of ``loopengine.yaml``; every key has a working default."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from loopengine.contract._base import Name, Strict
from loopengine.contract._names import MAX_COLLECTION_NAME

__all__ = [
    "Actions",
    "ActionsHttp",
    "Autolearn",
    "Chunking",
    "Cluster",
    "CollectionName",
    "Config",
    "DaemonSettings",
    "Embeddings",
    "EventSources",
    "KnowledgeCollection",
    "Node",
    "RedisStream",
    "Tracing",
    "WebFallback",
]

DEFAULT_DATABASE = "sqlite:///.loopengine/loopengine.db"


class Node(Strict):
    """An OpenAI-compatible chat endpoint (Ollama /v1, LM Studio, vLLM, llama.cpp, OpenAI)."""

    base_url: str = Field(
        pattern=r"^https?://",
        description="Base URL up to `/v1`.",
        examples=["http://127.0.0.1:11434/v1"],
    )
    model: Name = Field(description="Model name the endpoint serves.")
    timeout_s: float = Field(60, gt=0, description="Total deadline of one call.")
    api_key: str | None = Field(None, description="Bearer key; write `${ secret.NAME }`.")
    tool_choice: bool = Field(True, description="Whether the endpoint accepts `tool_choice`.")
    max_tokens: int | None = Field(None, gt=0, description="Cap of completion tokens per call.")
    stream: bool = Field(
        False,
        description="Ask for server-sent events (for proxies that cut long silent answers); "
        "`timeout_s` still covers the whole answer.",
    )


class Cluster(Strict):
    """The LLM nodes and which of them serve which category of request."""

    nodes: dict[str, Node] = Field(default_factory=dict, description="Nodes by name.")
    routing: dict[str, list[Name]] = Field(
        default_factory=dict, description="Category → node names in preference order."
    )
    chain: list[Name] = Field(
        default_factory=lambda: ["OL1", "M1", "M2"],
        min_length=1,
        max_length=8,
        description="Nodes of the reflexive chain, in order: the first researches with tools, "
        "the last reviews, those between analyse (any node names).",
    )


class DaemonSettings(Strict):
    """Where the daemon listens and which loops it schedules."""

    host: str = Field("127.0.0.1", description="Interface of the HTTP API.")
    port: int = Field(8787, ge=0, le=65535, description="Port of the HTTP API (0: any free one).")
    loops: str = Field("loops/", description="Folder of loop files.")
    workers: int = Field(4, ge=1, le=256, description="Jobs run at once by one daemon.")
    token: str | None = Field(
        None, description="Bearer token the HTTP API requires; write `${ secret.NAME }`."
    )
    grace_s: float = Field(
        30, ge=0, description="On SIGTERM, how long running executions may take to finish."
    )
    lease_s: float = Field(
        30,
        gt=1,
        description="A claimed job's lease; a daemon that stops renewing it for this long is "
        "presumed dead and its jobs are claimed again.",
    )
    poll_s: float = Field(
        0.2,
        gt=0,
        le=60,
        description="How often the queue, the event log and the metrics are polled when no "
        "notification tells of new work (PostgreSQL's listening connection down), and how often "
        "SQLite is checked for other processes' writes; while notifications arrive, idle daemons "
        "poll every 5 s or this, whichever is longer.",
    )
    store_outage_s: float = Field(
        300,
        ge=0,
        description="How long the daemon waits out a database it cannot reach or write "
        "(a restart, a full disk): its work pauses and goes on when the database is back; "
        "past this, each operation fails and is tried again later. The HTTP API answers 503 "
        "meanwhile.",
    )
    header_timeout_s: float = Field(
        10,
        gt=0,
        le=300,
        description="How long a request's line and headers may take to arrive whole, from the "
        "connection's opening or the previous answer; a connection past it is closed (a client "
        "sending nothing, or a byte at a time, holds nothing for long).",
    )
    connections_per_client: int = Field(
        64,
        ge=1,
        le=10_000,
        description="Connections one client address may hold open; at the limit, its oldest "
        "connection waiting for a request is closed for a new one.",
    )
    autolearn: bool = Field(
        False,
        description="Also schedule the shipped autolearn loops (autotune, autoreview, memory: "
        "they call the grader, review and analysis nodes) whose ids no file of the loops "
        "folder uses; needs cluster.nodes.",
    )


class RedisStream(Strict):
    """A Redis Stream whose entries the daemon appends to the event log (``source: redis``):
    read in a consumer group, acknowledged once the event is committed."""

    type: Literal["redis"] = Field(description="The kind of source.")
    url: str = Field(
        pattern=r"^rediss?://",
        description="The Redis server: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, or "
        "`rediss://…` over TLS.",
        examples=["redis://127.0.0.1:6379/0"],
    )
    stream: Name = Field(description="The stream's key.", examples=["loopengine:events"])
    group: Name = Field(
        "loopengine",
        description="Consumer group the daemons share (each entry goes to one of them); made "
        "at the stream's end when missing, so entries added before it are not read.",
    )
    consumer: Name | None = Field(
        None,
        description="This daemon's name in the group (default: its host name); keep it across "
        "restarts, so a restarted daemon first reads again what it had read and not committed.",
    )
    claim_idle_s: float = Field(
        60,
        gt=0,
        le=86_400,
        description="How long an entry read by another consumer may wait unacknowledged before "
        "this daemon claims it (that consumer died holding it).",
    )
    batch: int = Field(100, ge=1, le=1000, description="Most entries read at once.")


class EventSources(Strict):
    """Where events come from besides `emit`, the API and loops."""

    sources: list[RedisStream] = Field(
        default_factory=list,
        max_length=100,
        description="Streams the daemon reads into the event log (each entry: field `name`, "
        "and field `data` holding JSON).",
    )


class Autolearn(Strict):
    """How the chat's responses are scored and its routing tuned (seed 003)."""

    grader: Name = Field(
        "OL1",
        description="Node that grades each chat response 1–10 (one call per response, 10 s "
        "deadline; ungraded when it fails).",
    )
    min_samples: int = Field(
        5, ge=1, description="Responses a node needs in a category before its score ranks it."
    )
    window: int = Field(
        20,
        ge=1,
        le=10_000,
        description="Newest responses per node and category a score uses (smaller: a node's "
        "change shows sooner, and noise more).",
    )
    explore: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Share of simple-mode messages sent to an under-sampled node of the category.",
    )
    margin: float = Field(
        0.5,
        ge=0,
        le=10,
        description="How much better a node must score than the one above it to take its place.",
    )
    research: Name | None = Field(
        None,
        description="Node that summarizes a user's memory when the analysis node cannot "
        "(default: the first node of cluster.chain).",
    )
    analysis: Name | None = Field(
        None,
        description="Node that writes users' deep summaries and votes on prompt changes "
        "(default: the second node of cluster.chain, or its only one).",
    )
    review: Name | None = Field(
        None,
        description="Node that proposes better prompts for weak categories "
        "(default: the last node of cluster.chain).",
    )
    memory_keep: int = Field(
        50, ge=1, le=1000, description="Newest exchanges kept per user (older ones rotate out)."
    )
    summary_every: int = Field(
        10, ge=1, le=1000, description="New exchanges of a user that make a new deep summary due."
    )

    def node(self, role: str, chain: list[str]) -> str:
        """The node that plays ``role`` (``grader``, ``research``, ``analysis``, ``review``):
        the one set here, else the chain's node for that role."""
        chosen: str | None = getattr(self, role)
        if chosen is not None:
            return chosen
        defaults = {"research": chain[0], "analysis": chain[min(1, len(chain) - 1)]}
        return defaults.get(role, chain[-1])


class ActionsHttp(Strict):
    """Where ``http.request`` and ``webhook.send`` may go besides public addresses."""

    allow: list[Name] = Field(
        default_factory=list,
        description="Hosts they may reach although loopback or private: globs of `host` or "
        "`host:port` (e.g. `127.0.0.1:8080`, `*.internal.example`).",
    )


class Actions(Strict):
    """The built-in actions (``shell``, ``file.*``, ``http.request``…)."""

    root: str | None = Field(
        None,
        description="Folder the shell and file actions work under (relative to this file); "
        "default: each loop file's folder.",
    )
    http: ActionsHttp = Field(
        ActionsHttp.model_construct(), description="Destinations of the HTTP actions."
    )
    trash_days: float = Field(
        7,
        gt=0,
        le=36_500,
        description="Days the file actions keep what they took away (a deleted entry, the file "
        "a write replaced) in the trash beside the store, for `file.undo`; older entries are "
        "removed by the file actions themselves, at most once an hour, never one whose "
        "execution has not finished.",
    )


class Chunking(Strict):
    """How a collection's files are cut: by heading, then paragraph, to about ``size``
    characters, each chunk repeating the last ``overlap`` characters of the one before it."""

    size: int = Field(800, ge=100, le=20_000, description="Target characters of one chunk.")
    overlap: int = Field(
        100,
        ge=0,
        le=10_000,
        description="Characters a chunk repeats from the one before it (under `size`).",
    )

    @model_validator(mode="after")
    def _overlap_under_size(self) -> Chunking:
        if self.overlap >= self.size:
            raise ValueError(
                f"overlap {self.overlap} is not under size {self.size}: a chunk would repeat "
                "all of the one before it"
            )
        return self


class Embeddings(Strict):
    """Dense retrieval: chunks and queries embedded by a node's OpenAI-compatible
    ``/embeddings``, fused with the keyword ranking."""

    node: Name = Field(description="Node (under cluster.nodes) that serves `/embeddings`.")
    model: Name = Field(
        description="Embedding model the node serves.", examples=["nomic-embed-text"]
    )


class WebFallback(Strict):
    """A search endpoint ``rag.answer`` asks when the collection holds no passage good enough:
    ``GET url`` with the query in the ``param`` query parameter, answered with JSON
    ``{"results": [{"text" or "content", "url" or "source", "title" or "heading"}]}`` (as
    SearxNG's ``format=json`` answers)."""

    url: str = Field(
        pattern=r"^https?://[^/?#]",
        description="The endpoint; its `host` or `host:port` must be listed under "
        "actions.http.allow (questions leave for it).",
        examples=["https://search.example/search?format=json"],
    )
    param: Name = Field("q", description="Query parameter the query is sent in.")
    timeout_s: float = Field(10, gt=0, le=120, description="Deadline of one search.")


CollectionName = Annotated[str, Field(min_length=1, max_length=MAX_COLLECTION_NAME)]
"""A knowledge collection's name as a skill's param gives it."""


class KnowledgeCollection(Strict):
    """A knowledge base: the files it is made of, how they are cut, and who grades and embeds
    what is retrieved."""

    sources: list[Name] = Field(
        min_length=1,
        max_length=100,
        description="Folders and globs of Markdown, text, HTML and PDF files, relative to this "
        "file and inside its folder.",
        examples=[["kb/**/*.md", "manuals/"]],
    )
    chunk: Chunking = Field(Chunking.model_construct(), description="How files are cut.")
    grader: Name | None = Field(
        None,
        description="Node that grades what is retrieved (default: autolearn.grader, else the "
        "first routed node).",
    )
    embeddings: Embeddings | None = Field(
        None, description="Dense retrieval beside the keyword index (default: keywords only)."
    )
    web: WebFallback | None = Field(
        None,
        description="Web search `rag.answer` falls back on when the collection holds no "
        "relevant passage (default: none, it refuses).",
    )

    @property
    def embedding_model(self) -> str | None:
        """The node and model its vectors are made with (``node/model``); None without
        ``embeddings``."""
        found = self.embeddings
        return None if found is None else f"{found.node}/{found.model}"


class Tracing(Strict):
    """Where spans go: an OTLP/HTTP collector (needs ``pip install 'loopengine[otel]'``)."""

    otlp_endpoint: str | None = Field(
        None,
        pattern=r"^https?://[^/?#]+/?[^?#]*$",
        max_length=2000,
        description="The collector's base URL, spans posted to `/v1/traces` under it; "
        "`$OTEL_EXPORTER_OTLP_ENDPOINT` overrides it (default: no traces).",
        examples=["http://127.0.0.1:4318"],
    )
    service_name: str = Field(
        "loopengine", min_length=1, max_length=200, description="The spans' `service.name`."
    )
    sample_ratio: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Share of new traces kept; a trace started upstream follows its sender's "
        "choice.",
    )
    timeout_s: float = Field(
        3,
        gt=0,
        le=60,
        description="Deadline of one export, retries included (an unreachable collector "
        "delays the end of `loopengine run` by at most this).",
    )


class Config(Strict):
    """loopengine.yaml: database, plugins, tools sandbox, cluster, storage, daemon, events,
    autolearn, actions, knowledge, tracing."""

    database: str = Field(
        DEFAULT_DATABASE, description="SQLAlchemy URL: `sqlite:///path` or `postgresql://…`."
    )
    plugins: list[Name] = Field(
        default_factory=list, description="Modules or `.py` files that register skills and tools."
    )
    tools_root: str = Field(".", description="Sandbox root of the built-in file tools.")
    http_allow: list[Name] = Field(
        default_factory=list,
        description="Hosts `http_get` may reach although they are loopback or private "
        "(names or addresses, e.g. `127.0.0.1`).",
    )
    cluster: Cluster = Field(
        Cluster.model_construct(), description="OpenAI-compatible chat endpoints."
    )
    databases: dict[str, str] = Field(
        default_factory=dict,
        description="SQL databases that `database` sources read, by name; `default` unless a "
        "source sets `params: {database: NAME}` (default: the store's own database).",
    )
    storage: dict[str, str] = Field(
        default_factory=dict,
        description="Artifact storage names → URLs (`file://`, `sqlite://`, `postgresql://`, `redis://`).",
    )
    daemon: DaemonSettings = Field(
        DaemonSettings.model_construct(),
        description="The daemon: address, loops folder, workers, API token.",
    )
    events: EventSources = Field(
        EventSources.model_construct(), description="Event sources the daemon reads."
    )
    autolearn: Autolearn = Field(
        Autolearn.model_construct(), description="Scoring and tuning of the chat."
    )
    actions: Actions = Field(
        Actions.model_construct(), description="The built-in actions' root, destinations and trash."
    )
    knowledge: dict[str, KnowledgeCollection] = Field(
        default_factory=dict,
        description="Knowledge bases by name, for `loopengine knowledge` and the RAG skills.",
    )
    tracing: Tracing = Field(
        Tracing.model_construct(), description="OpenTelemetry traces, exported by OTLP/HTTP."
    )
