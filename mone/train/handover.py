"""A run's training state handed from one machine to the next: its newest checkpoint packed into one
file that can be committed, and unpacked into the workdir of a later machine, where training resumes
from it as from its own checkpoint (`loop.train` restores the newest good one).

Why: the machines that train the small profile's long runs live for a working session of about three
hours, and their cache (the workdirs) goes with them. A run longer than that, such as a MatViT image
run of 12,000 steps (about 3.5 hours on one core), would otherwise start again from step 0 on every
machine and never finish. The state of a small-profile run is small (a few MB: parameters, AdamW's
two moments and the run's history), so it travels in git beside the run files and is deleted when
the run's own file lands.

A checkpoint holds everything a resumed run needs, its curve and `trained_on` segments included; the
packed metrics.jsonl only lets `tail -f` and the queue's --list see where the run stands. The file is
the same bytes for the same checkpoint (sorted members, no owners or times), so packing a state that
did not move leaves git with nothing to commit.
"""
import gzip
import io
import tarfile
from pathlib import Path

CHECKPOINTS = "checkpoints"  # a workdir's orbax folder (`checkpoints.manager`): one folder per step
LOG = "metrics.jsonl"


def steps(workdir) -> list[int]:
  """The checkpointed steps in workdir, oldest first: orbax names a finished step's folder by its
  step and renames an unfinished write's temporary folder only once it is complete."""
  folder = Path(workdir) / CHECKPOINTS
  return sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit()) if folder.is_dir() else []


def has_checkpoint(workdir) -> bool:
  """Whether workdir holds a checkpoint to resume from."""
  return bool(steps(workdir))


def _reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
  info.uid = info.gid = 0
  info.uname = info.gname = ""
  info.mtime = 0
  return info


def pack(workdir, dest) -> int | None:
  """Writes workdir's newest checkpoint (and its metrics.jsonl) to `dest` (.tar.gz); returns its step,
  or None where workdir has no checkpoint (nothing is written). The file is written whole under
  another name and then renamed, so a parked state is never half-written."""
  workdir, dest = Path(workdir), Path(dest)
  if not (done := steps(workdir)):
    return None
  step = done[-1]
  top = workdir / CHECKPOINTS / str(step)
  members = sorted(p for p in top.rglob("*"))
  buffer = io.BytesIO()
  with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
    tar.add(top, arcname=f"{CHECKPOINTS}/{step}", recursive=False, filter=_reset)
    for p in members:
      tar.add(p, arcname=f"{CHECKPOINTS}/{step}/{p.relative_to(top).as_posix()}", recursive=False, filter=_reset)
    if (workdir / LOG).exists():
      tar.add(workdir / LOG, arcname=LOG, filter=_reset)
  dest.parent.mkdir(parents=True, exist_ok=True)
  partial = dest.with_name(dest.name + ".partial")
  with open(partial, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as gz:
    gz.write(buffer.getvalue())
  partial.replace(dest)
  return step


def parked_step(src) -> int:
  """The step of the checkpoint a packed state holds (`pack`)."""
  with tarfile.open(src, "r:gz") as tar:
    names = [m.name.split("/") for m in tar.getmembers()]
  return max(int(parts[1]) for parts in names if parts[0] == CHECKPOINTS and len(parts) > 1 and parts[1].isdigit())


def unpack(src, workdir) -> int | None:
  """Restores a packed state (`pack`) into workdir, where training then resumes from it; returns its
  step, or None where workdir already holds a checkpoint at that step or later (it is left as it is:
  the machine's own training is newer). A member that would land outside workdir is refused."""
  workdir = Path(workdir)
  step = parked_step(src)
  if (done := steps(workdir)) and done[-1] >= step:
    return None
  with tarfile.open(src, "r:gz") as tar:
    members = tar.getmembers()
    for m in members:
      if not (m.isfile() or m.isdir()) or Path(m.name).is_absolute() or ".." in Path(m.name).parts \
          or not (m.name == LOG or m.name.startswith(f"{CHECKPOINTS}/")):
        raise ValueError(f"{src}: a parked training state holds only {CHECKPOINTS}/<step>/ and {LOG}, got member {m.name!r}")
    workdir.mkdir(parents=True, exist_ok=True)
    tar.extractall(workdir, members=members, filter="data")
  return step
