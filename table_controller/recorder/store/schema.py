"""The recorder's schema as versioned migrations, the same SQL for PostgreSQL and SQLite.

Only types and statements that both accept: TEXT, INTEGER, BIGINT, primary
keys, ``INSERT ... ON CONFLICT``. Times are RFC 3339 text (UTC, milliseconds,
``Z``), which sorts as time in both. Booleans are 0/1. A migration is applied
once, in order, in one transaction with its ``schema_version`` row; a
database whose version is newer than the last one here is refused.
"""

from __future__ import annotations

from typing import Final

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            """CREATE TABLE messages (
                id TEXT PRIMARY KEY,
                site TEXT NOT NULL,
                table_id TEXT NOT NULL,
                topic TEXT NOT NULL,
                schema TEXT NOT NULL,
                epoch TEXT,
                feed_seq BIGINT,
                ts TEXT NOT NULL,
                received TEXT NOT NULL,
                payload TEXT NOT NULL,
                problem TEXT
            )""",
            "CREATE INDEX messages_feed ON messages (site, table_id, epoch, feed_seq)",
            "CREATE INDEX messages_table_ts ON messages (site, table_id, topic, ts)",
            """CREATE TABLE rounds (
                id TEXT PRIMARY KEY,
                site TEXT NOT NULL,
                table_id TEXT NOT NULL,
                epoch TEXT,
                round_id BIGINT NOT NULL,
                started TEXT,
                ended TEXT NOT NULL,
                dealer TEXT,
                void INTEGER NOT NULL,
                net BIGINT,
                handle BIGINT,
                ties INTEGER NOT NULL,
                wars INTEGER NOT NULL,
                surrenders INTEGER NOT NULL,
                record TEXT NOT NULL
            )""",
            "CREATE INDEX rounds_table_ended ON rounds (site, table_id, ended)",
            "CREATE INDEX rounds_round ON rounds (site, table_id, epoch, round_id)",
            """CREATE TABLE alerts (
                id TEXT PRIMARY KEY,
                site TEXT NOT NULL,
                table_id TEXT NOT NULL,
                alert TEXT NOT NULL,
                code TEXT NOT NULL,
                severity TEXT NOT NULL,
                message TEXT,
                round_id BIGINT,
                position INTEGER,
                spot TEXT,
                resolved_by TEXT,
                ts TEXT NOT NULL
            )""",
            "CREATE INDEX alerts_alert ON alerts (site, table_id, alert)",
            """CREATE TABLE latest (
                site TEXT NOT NULL,
                table_id TEXT NOT NULL,
                topic TEXT NOT NULL,
                id TEXT NOT NULL,
                ts TEXT NOT NULL,
                payload TEXT NOT NULL,
                PRIMARY KEY (site, table_id, topic)
            )""",
            """CREATE TABLE tables (
                site TEXT NOT NULL,
                table_id TEXT NOT NULL,
                first_seen TEXT NOT NULL,
                last_seen TEXT NOT NULL,
                PRIMARY KEY (site, table_id)
            )""",
            """CREATE TABLE feed_progress (
                site TEXT NOT NULL,
                table_id TEXT NOT NULL,
                epoch TEXT NOT NULL,
                contiguous BIGINT NOT NULL,
                announced BIGINT NOT NULL,
                updated TEXT NOT NULL,
                PRIMARY KEY (site, table_id, epoch)
            )""",
            """CREATE TABLE feed_gaps (
                site TEXT NOT NULL,
                table_id TEXT NOT NULL,
                epoch TEXT NOT NULL,
                first_seq BIGINT NOT NULL,
                last_seq BIGINT NOT NULL,
                state TEXT NOT NULL,
                since TEXT NOT NULL,
                PRIMARY KEY (site, table_id, epoch, state, first_seq)
            )""",
        ),
    ),
)
# Hand records are append-only (docs/recorder.md, "Records that cannot be altered"): in
# PostgreSQL the recorder's role loses UPDATE, DELETE and TRUNCATE on them; SQLite has no
# roles, so triggers refuse the statements. A statement marked "-- postgresql" or
# "-- sqlite" runs only there.
HAND_RECORDS: Final = ("messages", "rounds", "alerts", "chain_findings")
# What the recorder keeps current besides them (store/roles.py grants it full use).
WORKING_TABLES: Final = ("latest", "tables", "feed_progress", "feed_gaps", "purged_chains")


def append_only_trigger(table: str, verb: str) -> str:
    """SQLite's refusal of ``verb`` (UPDATE or DELETE) on a hand-record ``table``."""
    return (
        f"CREATE TRIGGER {table}_no_{verb.lower()} BEFORE {verb} ON {table}"
        f" BEGIN SELECT RAISE(ABORT, '{table}: hand records are append-only'); END"
    )


MIGRATIONS += (
    (
        2,
        (
            """CREATE TABLE chain_findings (
                site TEXT NOT NULL,
                table_id TEXT NOT NULL,
                epoch TEXT NOT NULL,
                round_id BIGINT NOT NULL,
                kind TEXT NOT NULL,
                detail TEXT NOT NULL,
                found TEXT NOT NULL,
                PRIMARY KEY (site, table_id, epoch, round_id, kind)
            )""",
            # Where a purge past the retention cut each chain: the newest record it removed,
            # so that the first kept record still links to something (ratings/retention.py).
            """CREATE TABLE purged_chains (
                site TEXT NOT NULL,
                table_id TEXT NOT NULL,
                epoch TEXT NOT NULL,
                round_id BIGINT NOT NULL,
                hash TEXT,
                cutoff TEXT NOT NULL,
                PRIMARY KEY (site, table_id, epoch)
            )""",
            "-- postgresql\nREVOKE UPDATE, DELETE, TRUNCATE ON "
            + ", ".join(HAND_RECORDS)
            + " FROM PUBLIC, CURRENT_USER",
            *(
                "-- sqlite\n" + append_only_trigger(table, verb)
                for table in HAND_RECORDS
                for verb in ("UPDATE", "DELETE")
            ),
        ),
    ),
)
# The dealer changes, for pace: a partial index, so that a window's changes (and the one
# in force at its start) are found without reading every event ever stored. A query uses
# it when it repeats this WHERE word for word (ratings/pace.py).
DEALER_CHANGES: Final = "topic = 'events' AND payload LIKE '%\"dealer_changed\"%'"
MIGRATIONS += (
    (
        3,
        (
            "CREATE INDEX messages_dealer_changes ON messages (site, table_id, topic, ts)"
            f" WHERE {DEALER_CHANGES}",
        ),
    ),
)
SCHEMA_VERSION: Final = MIGRATIONS[-1][0]
VERSION_TABLE: Final = "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
