"""Persistence: SQLAlchemy Core tables, migrations, one writer thread, repositories."""

from loopengine.store._database import DATABASE_ENV, create_engine
from loopengine.store._store import Store

__all__ = ["DATABASE_ENV", "Store", "create_engine"]
