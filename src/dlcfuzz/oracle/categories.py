"""The oracle's vocabulary: every verdict category in one table, and the typed dedup key.

A category is one row of `CATEGORIES`: its kind (bug, unknown, pass), how findings of it are
clustered (by operators for numeric ones, by message for error-like ones), whether it is judged by
comparing numbers, whether an unknown of it is routine (says nothing about the compiler), the
expected behaviour an issue report states, and how a reproducer script decides that it shows.
The engine, the clusters, the reference policy, the reproducer scripts and the issue text read the
table; a new category is one row (`add_category` for a plug-in).

The names below (`CRASH`, `WRONG_RESULT`, ...) are the strings stores hold: they never change.
"""

from __future__ import annotations

from dataclasses import dataclass

# ---- the names (stored in the sqlite store and the finding folders: never rename) ----------------
PASS = "pass"
REJECTED = "rejected"  # disruptive mode: every configuration rejected the invalid graph, as it must
CRASH = "crash"
OOM = "oom"
HANG = "hang"
UNEXPECTED_ERROR = "unexpected-error"
INCONSISTENT_REJECTION = "inconsistent-rejection"
WRONG_RESULT = "wrong-result"
INCONSISTENCY = "inconsistency"
ACCEPTED_INVALID = "accepted-invalid"
METAMORPHIC = "metamorphic"
MUTANT_REJECTED = "mutant-rejected"
SLOW = "slow"
EXPECTED_ERROR = "expected-error"  # also a prefix: "expected-error:<the backend's rejection class>"
DOCUMENTED_LENIENCY = "documented-leniency"
# a numeric difference where a configuration computes outside what its compiler documents (OpenVINO's CPU
# plugin: int64, uint32 and uint64 in int32 precision): counted apart, never a new bug (Backend.documented_limitation)
DOCUMENTED_LIMITATION = "documented-limitation"
NOT_LOWERABLE = "not-lowerable"
SEED_REJECTED = "seed-rejected"
NONFINITE_REFERENCE = "nonfinite-reference"
ILL_CONDITIONED_OUTPUT = "ill-conditioned-output"
INTEGER_OVERFLOW = "integer-overflow"
INTEGER_DIVISION_BY_ZERO = "integer-division-by-zero"
INTEGER_DIVISION_OVERFLOW = "integer-division-overflow"
INVALID_TEST = "invalid-test"
NONDETERMINISTIC_TEST = "nondeterministic-test"
INTERNAL_ERROR = "dlcfuzz-internal-error"

# How a reproducer script (backends/script.py) decides that a finding shows:
REPRO_ERROR = "error"  # a configuration raises the finding's exception
REPRO_ACCEPTED = "accepted"  # a configuration compiles and runs a model it must reject
REPRO_OOM = "oom"  # a configuration raises MemoryError
REPRO_COMPARE = "compare"  # outputs differ from the reference (or between configurations); a crash or hang
# shows as the script's process dying or not returning


@dataclass(frozen=True)
class Category:
    """One verdict category. `expected` may hold `{valid}`: why the model is valid for the compiler's
    front door (ONNX-checked or code), filled in by the issue text."""

    name: str
    kind: str  # "bug" | "unknown" | "pass"
    numeric: bool = False  # judged by comparing numbers (the reference's stability applies)
    clustered_by_ops: bool = False  # clusters by the reduced graph's operators, not by the message
    routine: bool = False  # an unknown that says nothing about the compiler: no blob is kept for it
    prefix: bool = False  # the name is a prefix: "NAME:detail" is this category too
    expected: str = "The compiler behaves like the reference."
    repro: str = REPRO_COMPARE
    key_tag: str = ""  # the first field of its findings' dedup keys ("" for categories without findings)
    key_has_message: bool = False  # its dedup key carries the error message (`error_key`) after the tag and compiler

    def matches(self, category: str) -> bool:
        return category == self.name or (self.prefix and category.startswith(self.name + ":"))


CATEGORIES: dict[str, Category] = {}


def add_category(category: Category) -> Category:
    """Register a category (a plug-in's new oracle adds its row here, once, at import)."""
    if category.kind not in ("bug", "unknown", "pass"):
        raise ValueError(f"category {category.name!r}: kind must be bug, unknown or pass, not {category.kind!r}")
    CATEGORIES[category.name] = category
    return category


for _row in (
    Category(PASS, "pass"),
    Category(REJECTED, "pass"),
    Category(CRASH, "bug", key_tag=CRASH,
             expected="The model compiles and runs (it is valid: {valid}), or is rejected with an error; the process "
                      "does not die."),
    Category(OOM, "bug", repro=REPRO_OOM, key_tag=OOM),
    Category(HANG, "bug", key_tag=HANG, expected="Compiling and running the model finishes within seconds."),
    Category(UNEXPECTED_ERROR, "bug", repro=REPRO_ERROR, key_tag="error", key_has_message=True,
             expected="The model compiles and runs: it is valid ({valid}) and the compiler documents support for "
                      "its operators and dtypes."),
    Category(INCONSISTENT_REJECTION, "bug", repro=REPRO_ERROR, key_tag="rejection", key_has_message=True,
             expected="Every configuration accepts the model, or every configuration rejects it: an "
                      "optimization must not make a valid model fail."),
    Category(WRONG_RESULT, "bug", numeric=True, clustered_by_ops=True, key_tag="wrong",
             expected="The outputs equal those of the operators' specification (dlcfuzz's NumPy reference), within "
                      "the tolerance of the dtype."),
    Category(INCONSISTENCY, "bug", numeric=True, clustered_by_ops=True, key_tag=INCONSISTENCY,
             expected="Every configuration computes the same outputs (within the tolerance of the dtype): an "
                      "optimization must not change the result."),
    Category(ACCEPTED_INVALID, "bug", repro=REPRO_ACCEPTED, key_tag="accepted",
             expected="The compiler rejects the model with an error: it breaks a type or shape rule of an operator."),
    Category(METAMORPHIC, "bug", numeric=True, clustered_by_ops=True, key_tag=METAMORPHIC,
             expected="The mutant (equivalent to the seed model by construction) computes the seed's outputs."),
    Category(MUTANT_REJECTED, "bug", key_tag=MUTANT_REJECTED, key_has_message=True,
             expected="The mutant compiles like its seed: it only adds operators the seed already uses."),
    Category(SLOW, "bug", clustered_by_ops=True, key_tag=SLOW,
             expected="The optimized build is not slower than the unoptimized one."),
    Category(EXPECTED_ERROR, "unknown", routine=True, prefix=True),
    Category(DOCUMENTED_LENIENCY, "unknown"),
    Category(DOCUMENTED_LIMITATION, "unknown"),
    Category(NOT_LOWERABLE, "unknown", routine=True),
    Category(SEED_REJECTED, "unknown"),
    Category(NONFINITE_REFERENCE, "unknown", routine=True),
    Category(ILL_CONDITIONED_OUTPUT, "unknown", routine=True),
    Category(INTEGER_OVERFLOW, "unknown", routine=True),
    Category(INTEGER_DIVISION_BY_ZERO, "unknown", routine=True),
    Category(INTEGER_DIVISION_OVERFLOW, "unknown", routine=True),
    Category(INVALID_TEST, "unknown"),
    Category(NONDETERMINISTIC_TEST, "unknown"),
    Category(INTERNAL_ERROR, "unknown"),
):
    add_category(_row)


def category_of(name: str) -> Category | None:
    """The row of a category name as stored ("expected-error:unsupported" is EXPECTED_ERROR's)."""
    row = CATEGORIES.get(name)
    if row is None and ":" in name:
        row = CATEGORIES.get(name.split(":", 1)[0])
        row = row if row is not None and row.prefix else None
    return row


def expected_error(rejection_class: str) -> str:
    """The category of a documented rejection the backend classified as `rejection_class`."""
    return f"{EXPECTED_ERROR}:{rejection_class}"


def is_numeric(name: str) -> bool:
    """Judged by comparing numbers."""
    row = category_of(name)
    return row is not None and row.numeric


def clustered_by_ops(name: str) -> bool:
    row = category_of(name)
    return row is not None and row.clustered_by_ops


def is_routine(name: str) -> bool:
    row = category_of(name)
    return row is not None and row.routine


def expected_text(name: str) -> str:
    row = category_of(name)
    return row.expected if row is not None else Category(name, "bug").expected


def repro_mode(name: str) -> str:
    row = category_of(name)
    return row.repro if row is not None else REPRO_COMPARE


def message_key_tags() -> tuple[str, ...]:
    """The dedup-key tags whose keys carry an error message after the tag and compiler."""
    return tuple(c.key_tag for c in CATEGORIES.values() if c.key_has_message)


@dataclass(frozen=True)
class DedupKey:
    """A finding's dedup key: `tag|compiler|field|...`, then `name=value` options a reduction adds
    (`ops=`, `opts=`, `passes=`). `str(key)` is the stored form (the store's `key` column, hashed into
    the signature): it must stay byte-identical, so fields are joined exactly as they were."""

    tag: str
    compiler: str
    fields: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "|".join((self.tag, self.compiler, *self.fields))

    def with_option(self, name: str, value: str) -> DedupKey:
        return DedupKey(self.tag, self.compiler, (*self.fields, f"{name}={value}"))

    def option(self, name: str) -> str | None:
        """The value of a `name=value` field (the last one), None when the key has none."""
        return next((f.split("=", 1)[1] for f in reversed(self.fields) if f.startswith(name + "=")), None)

    @staticmethod
    def parse(text: str) -> DedupKey:
        parts = text.split("|")
        return DedupKey(parts[0], parts[1] if len(parts) > 1 else "", tuple(parts[2:]))


def dedup_key(category: str, compiler: str, *fields: str) -> str:
    """The stored key of a finding of `category` (its row's tag first)."""
    row = category_of(category)
    tag = row.key_tag if row is not None and row.key_tag else category
    return str(DedupKey(tag, compiler, fields))


NUMERIC_REASONS = ("shape", "dtype", "nan", "inf", "value")  # how a numeric finding's outputs differ (its key's field)


def numeric_reason(key: str) -> str | None:
    """How a numeric finding (wrong result, inconsistency) differs, from its stored key: shape, dtype, nan, inf or
    value; None for a key without one."""
    return next((f for f in reversed(DedupKey.parse(key).fields) if f in NUMERIC_REASONS), None)


def with_option(key: str, name: str, value: str) -> str:
    """A stored key with a `name=value` field appended (`ops=`, `opts=`, `passes=`)."""
    return str(DedupKey.parse(key).with_option(name, value))
