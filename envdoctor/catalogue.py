"""Every rule a report counts, as one value: the built-in checks, the plugins' checks, a policy's rules
and the diagnosis's linking rules, with one `select` and one answer to "is this an id or a domain?".

The registries stay where the rules are written (`@check` in envdoctor/checks/, `@link` in
envdoctor/diagnosis/, RULES in envdoctor/policy/rules.py); this module finds them once and hands them
on as a `Catalogue`, the way flake8's plugin finder returns its `Plugins`: the engine judges what it is
given, `envdoctor checks` lists what the report will count, and `--only`/`--skip` accept exactly the ids
the report shows. Judging has two passes: the first runs the checks, the policy's rules and the
plugins over the facts; the second runs the links over the first pass's findings, so the diagnosis
sees every finding the report lists, a policy's included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence, Tuple

from envdoctor.checks import Check
from envdoctor.checks.registry import BUILTIN_MODULES, load_checks

Failure = Tuple[str, str]  # a plugin that failed to load: its entry point's name, the error


@dataclass(frozen=True)
class Catalogue:
    """The rules of one command, by kind, each kind in the order its rules run."""

    checks: Tuple[Check, ...] = ()
    plugins: Tuple[Check, ...] = ()
    policy: Tuple[Check, ...] = ()
    links: Tuple[Check, ...] = ()
    failures: Tuple[Failure, ...] = ()

    @property
    def first_pass(self) -> Tuple[Check, ...]:
        """The rules that judge the facts: checks, plugins, then the policy's rules."""
        return (*self.checks, *self.plugins, *self.policy)

    @property
    def rules(self) -> Tuple[Check, ...]:
        """Every rule, in the order the report records their runs: the first pass, then the links."""
        return (*self.first_pass, *self.links)

    def requires(self) -> frozenset:
        """Every fact section a rule of the first pass cannot be judged without."""
        return frozenset(section for rule in self.first_pass for section in rule.requires)

    def names(self) -> frozenset:
        """Every id and domain `--only` and `--skip` accept."""
        return frozenset(name for rule in self.rules for name in (rule.id, rule.domain))

    def unknown(self, names: Iterable[str]) -> Tuple[str, ...]:
        """The `names` that are no rule's id or domain."""
        known = self.names()
        return tuple(name for name in names if name not in known)

    def select(self, only: Sequence[str] = (), skip: Sequence[str] = ()) -> "Catalogue":
        """The rules whose id or domain is in `only` (when given) and in no `skip`; the plugins that
        failed to load stay, since their checks are missing whatever was selected."""

        def kept(rules: Tuple[Check, ...]) -> Tuple[Check, ...]:
            return tuple(rule for rule in rules if (not only or named(rule, only)) and not named(rule, skip))

        return Catalogue(kept(self.checks), kept(self.plugins), kept(self.policy), kept(self.links), self.failures)


def named(rule: Check, names: Sequence[str]) -> bool:
    return rule.id in names or rule.domain in names


def builtin(rule: Check) -> bool:
    return rule.function.__module__ in BUILTIN_MODULES


def linking_rules() -> Tuple[Check, ...]:
    """The diagnosis's linking rules (envdoctor/diagnosis/links.py), registered on import."""
    from envdoctor.diagnosis import LINKS, links  # noqa: F401  (importing `links` registers the rules)

    return tuple(LINKS)


def find(policy: Sequence[Check] = ()) -> Catalogue:
    """The catalogue of this installation: the built-in checks, the plugins' (the entry points of the
    `envdoctor.checks` group, loaded once), the linking rules, and `policy`, a policy's rules as
    checks (envdoctor.policy.checks_for) when one was named."""
    checks, failures = load_checks()
    return Catalogue(
        checks=tuple(c for c in checks if builtin(c)),
        plugins=tuple(c for c in checks if not builtin(c)),
        policy=tuple(policy),
        links=tuple(linking_rules()),
        failures=tuple(failures),
    )
