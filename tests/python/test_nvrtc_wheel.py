"""NVRTC from pip: the libnvrtc.so.13 of an installed nvidia-cuda-nvrtc wheel on the import path is handed to
the library (as $TROPICAL_NVRTC) when $TROPICAL_NVRTC is unset, and an explicit $TROPICAL_NVRTC still wins."""

import os
import sys

from tropical import _lib


def _fake_wheel(site, *parts):
    lib = site.joinpath(*parts)
    lib.mkdir(parents=True)
    path = lib / "libnvrtc.so.13"
    path.write_bytes(b"")
    return str(path)


def test_cuda13_layout(tmp_path):
    path = _fake_wheel(tmp_path / "site", "nvidia", "cu13", "lib")
    assert _lib._wheel_nvrtc([str(tmp_path / "empty"), str(tmp_path / "site")]) == path


def test_per_component_layout(tmp_path):
    path = _fake_wheel(tmp_path, "nvidia", "cuda_nvrtc", "lib")
    assert _lib._wheel_nvrtc([str(tmp_path)]) == path


def test_other_major_version_is_not_taken(tmp_path):
    lib = tmp_path / "nvidia" / "cuda_nvrtc" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnvrtc.so.12").write_bytes(b"")
    assert _lib._wheel_nvrtc([str(tmp_path)]) is None


def test_explicit_setting_wins(tmp_path, monkeypatch):
    path = _fake_wheel(tmp_path, "nvidia", "cu13", "lib")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setenv("TROPICAL_NVRTC", "/opt/cuda/lib64/libnvrtc.so.13")
    _lib._use_wheel_nvrtc()
    assert os.environ["TROPICAL_NVRTC"] == "/opt/cuda/lib64/libnvrtc.so.13"
    monkeypatch.delenv("TROPICAL_NVRTC")
    _lib._use_wheel_nvrtc()
    assert os.environ["TROPICAL_NVRTC"] == path


def test_nothing_installed_leaves_the_toolkit(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.delenv("TROPICAL_NVRTC", raising=False)
    _lib._use_wheel_nvrtc()
    assert "TROPICAL_NVRTC" not in os.environ


def test_current_directory_is_not_searched(tmp_path, monkeypatch):
    _fake_wheel(tmp_path, "nvidia", "cu13", "lib")
    monkeypatch.chdir(tmp_path)
    assert _lib._wheel_nvrtc([""]) is None
