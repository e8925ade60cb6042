"""The recorder's database: one schema, two backends (PostgreSQL, SQLite), one writer."""
