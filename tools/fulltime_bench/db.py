"""SQL: the texts in sql/ beside this file, run with psql (scripts with psql variables,
meta-commands or DO blocks, and statements that may not run in a transaction block) or with
psycopg (one statement whose rows the benchmark reads, %(name)s parameters)."""

import functools
import os
import subprocess

import psycopg

from . import common

SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql")


def path(name):
    """The path of sql/NAME (".sql" added when NAME has no extension)."""
    return os.path.join(SQL_DIR, name if "." in name else name + ".sql")


@functools.lru_cache(maxsize=None)
def text(name):
    with open(path(name)) as f:
        return f.read()


def psql_command(url, variables=None, tuples=False, separator=None):
    """psql's command line on `url`: no psqlrc, quiet, stopping at the first error, with
    `variables` as -v NAME=VALUE. The SQL comes on its standard input, as from a here-document
    (its messages say "<stdin>")."""
    args = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url]
    for k, v in (variables or {}).items():
        args += ["-v", f"{k}={v}"]
    if tuples:
        args += ["-A", "-t"]
    if separator is not None:
        args += ["-F", separator]
    return args


def psql_env(settings):
    """The environment for a psql whose session has these settings (PGOPTIONS -c NAME=VALUE,
    how the DO blocks in sql/ read their parameters with current_setting)."""
    env = dict(os.environ)
    if settings:
        env["PGOPTIONS"] = " ".join(f"-c {k}={v}" for k, v in settings.items())
    return env


def psql(url, name, variables=None, settings=None, what=None, **kwargs):
    """Runs sql/NAME with psql and returns its output (its messages go to stderr); with `what`,
    a failure ends the benchmark with "error: WHAT", else raises CalledProcessError."""
    with open(path(name)) as sql:
        p = subprocess.run(psql_command(url, variables, **kwargs), env=psql_env(settings),
                           stdin=sql, stdout=subprocess.PIPE, text=True)
    if p.returncode:
        if what:
            common.die(what)
        raise subprocess.CalledProcessError(p.returncode, p.args, p.stdout)
    return p.stdout


def psql_background(url, name, out_path, settings=None, variables=None):
    """Starts psql on sql/NAME in the background, its output and errors in `out_path`."""
    with open(out_path, "w") as out, open(path(name)) as sql:
        return subprocess.Popen(psql_command(url, variables), env=psql_env(settings),
                                stdin=sql, stdout=out, stderr=subprocess.STDOUT)


def rows(url, name, /, **params):
    """The rows of sql/NAME's one statement on a connection of its own (autocommit)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return execute(conn, name, **params)


def row(url, name, /, **params):
    found = rows(url, name, **params)
    return found[0] if found else None


def execute(conn, name, /, **params):
    """The rows of sql/NAME on an open connection ([] for a statement without any)."""
    cur = conn.execute(text(name), params or None)
    return cur.fetchall() if cur.description else []


def checkpoint(url):
    """CHECKPOINT, so that the next run starts with the same full-page-write cost."""
    rows(url, "checkpoint")
