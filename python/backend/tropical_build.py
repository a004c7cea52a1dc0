"""The PEP 517 backend of pyproject.toml: meson-python, with the wheel's platform tag set from the glibc and
libstdc++ symbol versions its ELF files need (manylinux_2_N), since meson-python 0.12 tags a wheel that has
no CPython extension py3-none-linux_x86_64 (the build machine only) and ships no auditwheel."""

import base64
import hashlib
import os
import re
import zipfile

import mesonpy
from mesonpy import build_sdist, get_requires_for_build_sdist, get_requires_for_build_wheel  # noqa: F401

# The oldest glibc of a mainstream distribution that ships each libstdc++ symbol version (GLIBCXX_3.4.N):
# RHEL 8 (2.28) has 3.4.25, Debian 11 (2.31) 3.4.28, RHEL 9 (2.34) 3.4.29, Ubuntu 22.04 (2.35) 3.4.30,
# Ubuntu 24.04 (2.39) 3.4.33.
_LIBSTDCXX_GLIBC = {25: 28, 28: 31, 29: 34, 30: 35, 33: 39}
_OLDEST_GLIBC = 28


def _glibc_needed(elf_bytes):
    """The glibc minor version (2.N) that an ELF file's symbol versions need."""
    needed = _OLDEST_GLIBC
    for match in re.finditer(rb"GLIBC_2\.(\d+)", elf_bytes):
        needed = max(needed, int(match.group(1)))
    for match in re.finditer(rb"GLIBCXX_3\.4\.(\d+)", elf_bytes):
        minor = int(match.group(1))
        fits = [glibc for cxx, glibc in _LIBSTDCXX_GLIBC.items() if cxx >= minor]
        if not fits:
            raise RuntimeError(f"tropical_build: GLIBCXX_3.4.{minor} is newer than any known distribution's")
        needed = max(needed, min(fits))
    return needed


def platform_tag(wheel):
    """manylinux_2_N_<arch> for the ELF files of a wheel (zipfile.ZipFile), from their symbol versions."""
    needed = _OLDEST_GLIBC
    for info in wheel.infolist():
        data = wheel.read(info)
        if data[:4] == b"\x7fELF":
            needed = max(needed, _glibc_needed(data))
    return f"manylinux_2_{needed}_{os.uname().machine}"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def retag(path):
    """Rewrites the wheel at path as py3-none-<platform_tag> (a platform wheel whose root is platlib);
    returns the new file name."""
    directory, name = os.path.split(path)
    with zipfile.ZipFile(path) as old:
        tag = f"py3-none-{platform_tag(old)}"
        distribution, version = name.split("-")[:2]
        new_name = f"{distribution}-{version}-{tag}.whl"
        wheel_info = next(n for n in old.namelist() if n.endswith(".dist-info/WHEEL"))
        record = next(n for n in old.namelist() if n.endswith(".dist-info/RECORD"))
        text = old.read(wheel_info).decode()
        text = re.sub(r"(?m)^Tag: .*$", f"Tag: {tag}", text)
        text = re.sub(r"(?m)^Root-Is-Purelib: .*$", "Root-Is-Purelib: false", text)
        wheel_data = text.encode()
        lines = [line for line in old.read(record).decode().splitlines()
                 if line and not line.startswith((wheel_info + ",", record + ","))]
        lines.append(_record_line(wheel_info, wheel_data))
        with zipfile.ZipFile(os.path.join(directory, new_name), "w", zipfile.ZIP_DEFLATED) as new:
            for info in old.infolist():
                if info.filename == record:
                    continue
                data = wheel_data if info.filename == wheel_info else old.read(info)
                new.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
            new.writestr(zipfile.ZipInfo(record, date_time=(1980, 1, 1, 0, 0, 0)),
                         "\n".join(lines + [f"{record},,"]) + "\n", compress_type=zipfile.ZIP_DEFLATED)
    if new_name != name:
        os.remove(path)
    return new_name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """meson-python's wheel, retagged for the glibc and libstdc++ it needs."""
    name = mesonpy.build_wheel(wheel_directory, config_settings, metadata_directory)
    return retag(os.path.join(wheel_directory, name))
