#!/usr/bin/env python3
"""Installs the entries of a prebuilt cache directory as a read-only layer.

Usage: install_prebuilt_cache.py BUILD_CACHE_DIR INSTALL_DIR (relative to the prefix, or absolute)

Only `<64 hex>.entry` files are copied (no lock or statistics files), mode 0644 in a 0755 directory,
so that every user may read them and none may write them; DESTDIR is honoured.
"""

import os
import re
import shutil
import sys

ENTRY = re.compile(r"^[0-9a-f]{64}\.entry$")


def main():
    source, target = sys.argv[1], sys.argv[2]
    prefix = os.environ["MESON_INSTALL_DESTDIR_PREFIX"]
    target = os.path.join(prefix, target) if not os.path.isabs(target) else \
        os.environ.get("DESTDIR", "") + target
    os.makedirs(target, exist_ok=True)
    os.chmod(target, 0o755)
    count = 0
    for name in sorted(os.listdir(source)):
        if ENTRY.match(name) and os.path.isfile(os.path.join(source, name)):
            shutil.copyfile(os.path.join(source, name), os.path.join(target, name))
            os.chmod(os.path.join(target, name), 0o644)
            count += 1
    print(f"Installing {count} prebuilt cache entries to {target}")


if __name__ == "__main__":
    main()
