"""`fix --mixed-wheels`: drop the NVIDIA wheel families nothing installed needs.

cu11 and cu12 wheels share `site-packages/nvidia/<lib>/lib`, so a family left behind by an older torch
sits beside the one in use and can be loaded into the same process. A family stays when torch's build
or any other installed package requires it; when two families are both required, the plan says so
and changes nothing (they belong in separate environments).
"""

from __future__ import annotations

from typing import Any, Mapping

from envdoctor.fix.installer import Installer
from envdoctor.fix.plan import Expectation, Plan, Step, StepKind, StepStatus
from envdoctor.fix.requires import families_installed, families_needed, target
from envdoctor.fix.verify import import_torch_argv
from envdoctor.knowledge.wheels import torch_family


def needed_families(facts: Mapping[str, Any]) -> dict:
    """Family -> who needs it: the families of installed packages' requirements, plus torch's build."""
    needed = {family: list(names) for family, names in families_needed(facts).items()}
    family = torch_family(target(facts).torch_facts.get("cuda"))
    if family and "torch" not in needed.setdefault(family, []):
        needed[family].append("torch")
    return needed


def plan_mixed_wheels(facts: Mapping[str, Any], installer: Installer) -> Plan:
    """The plan for `fix --mixed-wheels`; pure: facts in, plan out."""
    present = families_installed(facts)
    needed = needed_families(facts)
    drop = [f for f in present if f not in needed]
    keep = [f for f in present if f in needed]
    names = sorted(n for f in drop for n in present[f])
    build = target(facts).torch_facts
    torch_desc = f"torch {build['version']}" if build.get("version") else "no torch"
    if len(present) < 2:
        reason = f"only {', '.join(present)} NVIDIA wheels are installed: nothing is mixed" if present else "no NVIDIA CUDA wheels are installed"
        step = Step(StepKind.UNINSTALL, "Remove NVIDIA wheel families nothing needs", reason, StepStatus.SKIPPED)
    elif not drop:
        users = "; ".join(f"{f} by {', '.join(needed[f])}" for f in keep)
        step = Step(StepKind.UNINSTALL, "Remove NVIDIA wheel families nothing needs", f"every installed family is required ({users}): use separate environments", StepStatus.SKIPPED)
    else:
        kept = "; ".join(f"{f} (needed by {', '.join(needed[f])})" for f in keep) or "no CUDA family"
        step = Step(
            StepKind.UNINSTALL,
            f"Remove the {', '.join(drop)} wheels: {', '.join(names)}",
            f"{torch_desc} and the other installed packages need {kept}; the {', '.join(drop)} libraries would only be mixed in",
            argv=installer.uninstall(names),
        )
    has_torch = "torch" in target(facts).distributions
    verify = Step(
        StepKind.VERIFY,
        "Check that torch still imports",
        "a fresh interpreter loads the remaining stack" if has_torch else "torch is not installed",
        StepStatus.PLANNED if has_torch else StepStatus.SKIPPED,
        import_torch_argv(installer.python) if has_torch else (),
    )
    return Plan(
        action="mixed-wheels",
        title=f"Keep one NVIDIA wheel family (installed: {', '.join(present) or 'none'}; {torch_desc})",
        python=installer.python,
        installer=installer.name,
        steps=(step, verify),
        expect=Expectation(absent=tuple(names), torch_imports=has_torch, families=tuple(keep)),
    )
