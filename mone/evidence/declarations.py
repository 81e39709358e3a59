"""Each chapter's claims, declared once, in the chapter's own module: the registries read from them.

A chapter module (`MODULES`, in book order) states `CHAPTER`, a `Chapter`: its title ("Figure 3"), the
claim-id prefix of its claims ("fig3."), the family of the paper's questions it answers and its
claims (`Claim`). A claim states how its interval pairs seeds (`Claim.pairing`) and, where a seed plan freezes
it, what each seed contributes (`Claim.metric`) and which runs it compares (`Claim.arms`: arms (`Arm`),
written as the book labels them, or words for what is not a trained arm). Everything keyed by claim id
is generated from these declarations: the pairing design (`claims.PAIRING`), the frozen definitions
(`preregistration.DEFINITIONS`) and the landing page's families (`pages.FAMILIES`). A new claim is one
`Claim` beside the code that decides it; a new chapter is one more module in `MODULES`, with what it
reads declared in `mone.configs.reads` (the plan is generated from those arms, below the chapters, and
every arm a claim compares must be one its chapter reads at every seed). A claim decided
by an interval over seeds also declares its rule (`Claim.rule`: the relation and its tolerance), which
`claims.trained` reads, so no call site restates it.

The chapter modules import the analysis code that imports the registries, so the declarations are read
when first asked for (`declared`), not when this module loads; nothing here imports a chapter.
"""
import dataclasses
import functools
import importlib

from mone.evidence.stats import RELATIONS
from mone.configs import reads
from mone.configs.arms import Arm

# Book order: the registries list their chapters in it.
MODULES = ["mone.chapters.figure1", "mone.chapters.table1", "mone.chapters.figure3", "mone.chapters.figure4",
           "mone.chapters.figure5", "mone.chapters.figure6", "mone.chapters.figure7", "mone.chapters.speed_claims"]
# The paper's three questions, the central one first: the landing page answers in this order (a family
# not listed here comes after them, in book order).
FAMILY_ORDER = ("Accuracy per FLOP", "Adaptation", "Routing")

ACCURACY = "top-1 test accuracy (%)"
# Paired or Welch, by design (`Claim.pairing`). Pairing by seed is justified where a seed gives both arms
# what they share: the same data order (`mone.data.pipeline.train_batches` draws batches from the seed and
# the step alone) and the same initial weights for every parameter both have (Flax draws a parameter from
# the seed and its path), or where both quantities are measured on the same trained model. A paired
# interval is valid whatever the arms' correlation and gains where they correlate; Welch's assumes
# independent arms. tests/evidence/test_claims.py and test_significance.py check the premises. A pair
# trained on two devices keeps them, but a run retrained on another device differs about as much as
# another seed (`mone.chapters.devices`), so pairing gains little there (the interval stays valid);
# `plan.reading` reads a run's CPU twin where the single-device reading is in force.
SAME_SEED = ("the same seed gives both arms the same data order and identical initial weights for every "
             "parameter they share (tested)")
WITHIN = ("paired", "both quantities are measured on the same trained model and evaluation data of each seed")
TESTS = ("paired", "welch")
BEATS = ("beats", 0.0)  # the rule of most claims: MoNE minus the baseline is above 0


@dataclasses.dataclass(frozen=True)
class Claim:
  """One claim, or with an id ending in "." a family of claim ids (every id it starts), as its chapter
  declares it. pairing: (test, why), the interval its design calls for ('paired' or 'welch') and the
  reason, or None to inherit the longest declared prefix's; metric and arms: the definition a seed
  plan freezes (None for a claim no plan freezes). An arm is an `mone.configs.arms.Arm` (its book
  label is what the definition records) or a description of what is not one arm. rule: (relation,
  tolerance) for a claim decided by an interval over seeds (`claims.trained`, `stats.decide`):
  ("beats", 0.0), ("matches", 1.0): within 1 point either way, ("no_worse", 1.0): at most 1 point
  below; it also holds for the ids that continue this one after a "." (one claim per e_c)."""
  id: str
  pairing: tuple[str, str] | None = None
  metric: str | None = None
  arms: tuple = ()
  rule: tuple[str, float] | None = None

  def __post_init__(self):
    if not self.id or " " in self.id:
      raise ValueError(f"Claim.id must be a non-empty claim id or prefix without spaces, got {self.id!r}")
    if self.pairing is not None and (len(self.pairing) != 2 or self.pairing[0] not in TESTS):
      raise ValueError(f"Claim.pairing must be (test, why) with test one of {TESTS}, got {self.pairing!r}")
    if self.rule is not None and (len(self.rule) != 2 or self.rule[0] not in RELATIONS
                                  or not isinstance(self.rule[1], (int, float)) or not self.rule[1] >= 0):
      raise ValueError(f"claim {self.id!r}: Claim.rule must be (relation, tolerance) with relation one of "
                       f"{RELATIONS} and tolerance >= 0, got {self.rule!r}")
    if (self.metric is None) != (not self.arms):
      raise ValueError(f"claim {self.id!r}: a frozen definition needs both metric and arms, got metric="
                       f"{self.metric!r}, arms={self.arms!r}")

  def definition(self) -> dict:
    """{"metric", "arms"}: the frozen part of the claim's definition, arms as the book labels them."""
    return {"metric": self.metric, "arms": [a if isinstance(a, str) else a.label for a in self.arms]}


@dataclasses.dataclass(frozen=True)
class Chapter:
  """A chapter as its module declares it. title: the paper's figure or table ("Figure 3", "Table 1");
  prefix: the start of every claim id it decides; family: the question of `FAMILY_ORDER` it answers
  (None: none, e.g. arithmetic or timing); claims: its claims (`Claim`), each id under prefix."""
  title: str
  prefix: str
  family: str | None
  claims: tuple[Claim, ...]

  def __post_init__(self):
    if not self.prefix.endswith("."):
      raise ValueError(f"Chapter.prefix must end with '.', got {self.prefix!r}")
    outside = [c.id for c in self.claims if not c.id.startswith(self.prefix)]
    if outside:
      raise ValueError(f"{self.title}: claim ids {outside} do not start with its prefix {self.prefix!r}")


def declared() -> tuple[Chapter, ...]:
  """Every chapter's `CHAPTER`, in `MODULES` order (imported on first use)."""
  # Read from the modules on every call (a dictionary lookup once imported), so that a chapter replaced
  # under the same name is seen; what is derived from them is cached by the declarations themselves.
  return _checked(tuple((m, importlib.import_module(m).CHAPTER) for m in MODULES))


@functools.cache
def _checked(declared: tuple[tuple[str, Chapter], ...]) -> tuple[Chapter, ...]:
  """The chapters, once their claim ids are unique and every arm a claim compares is one its chapter
  reads at every seed of the small profile's plan (`mone.configs.reads`): a claim cannot freeze a
  comparison of runs the plan does not train at every seed."""
  chapters = tuple(ch for _, ch in declared)
  ids = [c.id for ch in chapters for c in ch.claims]
  twice = sorted({i for i in ids if ids.count(i) > 1})
  if twice:
    raise ValueError(f"claim ids declared more than once: {twice}")
  for module, ch in declared:
    name = module.rpartition(".")[2]
    every = reads.CHAPTERS[name]("small").every_seed if name in reads.CHAPTERS else ()
    for c in ch.claims:
      unread = [a.label for a in c.arms if isinstance(a, Arm) and a not in every]
      if unread:
        raise ValueError(f"claim {c.id!r} compares {unread}, which {ch.title} does not read at every seed: "
                         f"declare them in mone.configs.reads.{name}")
  return chapters


def pairing() -> dict[str, tuple[str, str]]:
  """{claim id or prefix: (test, why)} of every claim declaring its pairing (`claims.PAIRING`)."""
  return _pairing(declared())


@functools.cache
def _pairing(chapters) -> dict[str, tuple[str, str]]:
  return {c.id: c.pairing for ch in chapters for c in ch.claims if c.pairing is not None}


def declaring(claim_id: str) -> Claim | None:
  """The declared claim that covers `claim_id`: the claim itself, else the longest declared family
  ("fig4.") it starts or declared id it continues after a "." (one claim per e_c); None if none."""
  owners = [c for ch in declared() for c in ch.claims if _covers(c.id, claim_id)]
  return max(owners, key=lambda c: len(c.id)) if owners else None


def _covers(declared_id: str, claim_id: str) -> bool:
  return claim_id == declared_id or claim_id.startswith(declared_id if declared_id.endswith(".") else declared_id + ".")


def rule(claim_id: str) -> tuple[str, float] | None:
  """(relation, tolerance) a claim is decided by: its own declared rule, or that of the longest declared
  id it continues after a "." (fig6.learned_beats_random.e_c03: fig6.learned_beats_random's); None
  where no declaration gives one."""
  table = _rules(declared())
  owners = [c for c in table if _covers(c, claim_id)]
  return table[max(owners, key=len)] if owners else None


@functools.cache
def _rules(chapters) -> dict[str, tuple[str, float]]:
  return {c.id: (c.rule[0], float(c.rule[1])) for ch in chapters for c in ch.claims if c.rule is not None}


def definitions() -> dict[str, dict]:
  """{claim id: {"metric", "arms"}} of every claim a seed plan freezes (`preregistration.DEFINITIONS`).
  The same dict on every call: a test may patch an entry."""
  return _definitions(declared())


@functools.cache
def _definitions(chapters) -> dict[str, dict]:
  return {c.id: c.definition() for ch in chapters for c in ch.claims if c.metric is not None}


def families() -> dict[str, tuple[tuple[str, ...], str]]:
  """{family: (its chapters' claim-id prefixes, where the paper shows it: "Figures 3, 4 and Table 1")},
  in `FAMILY_ORDER` (`pages.FAMILIES`)."""
  return _families(declared())


@functools.cache
def _families(chapters) -> dict[str, tuple[tuple[str, ...], str]]:
  names = [f for f in FAMILY_ORDER if any(ch.family == f for ch in chapters)]
  names += [f for f in dict.fromkeys(ch.family for ch in chapters) if f is not None and f not in names]
  out = {}
  for name in names:
    own = [ch for ch in chapters if ch.family == name]
    out[name] = (tuple(ch.prefix for ch in own), where([ch.title for ch in own]))
  return out


def where(titles: list[str]) -> str:
  """Titles as one phrase, figures before tables, each in number order: ["Table 1", "Figure 4",
  "Figure 3"] -> "Figures 3, 4 and Table 1"; ["Figure 5"] -> "Figure 5"."""
  def key(title):
    kind, _, number = title.rpartition(" ")
    return (kind != "Figure", kind, int(number) if number.isdigit() else 0, number)
  titles = sorted(titles, key=key)
  figures = [t for t in titles if t.startswith("Figure ")]
  words = [t.removeprefix("Figure ") for t in figures] + titles[len(figures):]
  if len(figures) > 1:
    words[0] = "Figures " + words[0]
  elif figures:
    words[0] = "Figure " + words[0]
  return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
