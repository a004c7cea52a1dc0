"""README.md, docs/ and ARCHITECTURE.md against the code and files they describe:

- the C++ example in the README is examples/first_product/first_product.cpp, verbatim (that file is built
  and run by the `first_product` test);
- every command and flag named in the command table of docs/cli.md ("## Commands") is one that
  `tropical --help` and `tropical COMMAND --help` name, and the quick start's commands, their flags, its
  meson options and kernel names exist;
- the README's test command is the one .ci/run runs, and its quick start installs the same Debian packages
  (a new user and CI get the same);
- every citation of bench/RESULTS.md (`bench/RESULTS.md`, "Section") names a section that exists there, and
  none cites a line number (lines move; sections are found by name);
- the README stays short (at most 200 lines) and its links to files of the tree resolve;
- ARCHITECTURE.md's table cells stay at one line a directory (at most 300 characters each);
- no file of the code's folders names an issue by number or a date (history is CHANGELOG.md's).

Usage: readme_test.py SOURCE_ROOT PATH_TO_TROPICAL
"""

import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest

SOURCE, TROPICAL = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
EXAMPLE = os.path.join("examples", "first_product", "first_product.cpp")
README_MAX_LINES = 200
CELL_MAX_CHARS = 300


def read(*path):
    with open(os.path.join(SOURCE, *path), encoding="utf-8") as f:
        return f.read()


def readme():
    return read("README.md")


def documents():
    """(path relative to SOURCE, text) of the README, ARCHITECTURE.md, CHANGELOG.md and docs/*.md."""
    paths = ["README.md", "ARCHITECTURE.md", "CHANGELOG.md"]
    paths += sorted(os.path.relpath(p, SOURCE) for p in glob.glob(os.path.join(SOURCE, "docs", "*.md")))
    return [(p, read(p)) for p in paths if os.path.exists(os.path.join(SOURCE, p))]


def run_tropical(*args):
    """stdout of `tropical ARGS`, with a cache directory of its own (never the user's)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TROPICAL_CACHE_DIR=cache)
        proc = subprocess.run([TROPICAL, *args], capture_output=True, text=True, timeout=60, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"tropical {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc.stdout


def help_text(*args):
    return run_tropical(*args, "--help")


def section(text, heading):
    """The body of the markdown section that starts with the line `heading`, up to the next one of its level."""
    level = heading.split(" ", 1)[0]
    parts = text.split("\n" + heading + "\n", 1)
    if len(parts) != 2:
        raise AssertionError(f"no section {heading!r}")
    return re.split(rf"\n{level} ", parts[1], maxsplit=1)[0]


def command_table(text):
    """The code spans of the first column of the command table, one list per row."""
    rows = [line for line in section(text, "## Commands").splitlines() if line.startswith("| `tropical")]
    return [re.findall(r"`(tropical[^`]*)`", row.split(" | ")[0]) for row in rows]


def shell_blocks(text):
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def results_sections():
    """The titles of bench/RESULTS.md's headings, without the leading #s."""
    return [line.lstrip("#").strip() for line in read("bench", "RESULTS.md").splitlines() if line.startswith("#")]


def names_a_section(name, titles):
    """True if a heading is `name`, or `name` followed by its qualifiers (" (...)", ": ...", ", ...")."""
    return any(t == name or (t.startswith(name) and t[len(name)] in " :,") for t in titles)


class ReadmeTest(unittest.TestCase):
    def test_the_quick_start_installs_what_ci_installs(self):
        installs = re.findall(r"apt-get install -y ([^&\n]+)", readme())
        self.assertTrue(installs, "no apt-get install in the README")
        ci = re.search(r'^packages="([^"]+)"', read(".ci", "run"), re.M)
        self.assertIsNotNone(ci, ".ci/run has no packages= line")
        for line in installs:
            self.assertEqual(sorted(line.split()), sorted(ci.group(1).split()),
                             "README's apt-get install and .ci/run's packages differ")

    def test_the_readme_test_command_is_what_ci_runs(self):
        commands = [line.split("&& ", 1)[-1].strip() for block in shell_blocks(readme())
                    for line in block.splitlines() if "meson test" in line]
        self.assertEqual(len(commands), 1, "the README should show one test command (quick start, command 2)")
        ci = re.search(r"meson test -C build [^|&\n]*", read(".ci", "run"))
        self.assertIsNotNone(ci, ".ci/run runs no `meson test -C build`")
        self.assertEqual(commands[0], ci.group(0).strip(), "README's test command is not the one .ci/run runs")

    def test_the_quick_start_commands_and_kernels_exist(self):
        usage = help_text()
        catalog = run_tropical("list")
        quick = [line for block in shell_blocks(readme()) for line in block.splitlines()
                 if "build/src/tropical " in line]
        self.assertTrue(quick, "no build/src/tropical command in the README's quick start")
        for line in quick:
            for command in re.findall(r"build/src/tropical (\w+)", line):
                self.assertRegex(usage, rf"\n  {command} ", f"quick start: no command {command} in tropical --help")
            for name in re.findall(r"\btropical_\w+", line):
                self.assertRegex(catalog, rf"(?<!\w){name}(?!\w)", f"quick start: {name} is not in tropical list")

    def test_the_quick_start_flags_are_known(self):
        """Every flag of a `build/src/tropical COMMAND` line is in `tropical COMMAND --help`, and every
        -Doption of a `meson setup` line is one of meson.options (or meson's own)."""
        lines = [line for block in shell_blocks(readme()) for line in block.splitlines()]
        for line in lines:
            for command, rest in re.findall(r"build/src/tropical (\w+)([^&|]*)", line):
                known = help_text(command)
                for flag in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", rest):
                    self.assertRegex(known, rf"(?<![\w-]){re.escape(flag)}(?![\w-])",
                                     f"quick start: `tropical {command}` has no flag {flag}")
        options = set(re.findall(r"option\('(\w+)'", read("meson.options")))
        builtin = {"werror", "buildtype", "optimization", "prefix", "libdir", "b_sanitize", "b_lundef"}
        setups = [line for line in lines if "meson setup" in line]
        self.assertTrue(setups, "no meson setup in the README")
        for line in setups:
            for option in re.findall(r"-D(\w+)=", line.split("meson setup", 1)[1].split("&&")[0]):
                self.assertIn(option, options | builtin, f"the README's meson setup sets an unknown option {option}")

    def test_the_cpp_example_is_the_file_the_tests_build(self):
        example = read(EXAMPLE).strip()
        blocks = re.findall(r"```cpp\n(.*?)```", readme(), re.S)
        self.assertIn(example, [b.strip() for b in blocks], f"README's C++ example differs from {EXAMPLE}")

    def test_every_command_and_flag_of_the_command_table_is_in_help(self):
        rows = command_table(read("docs", "cli.md"))
        self.assertGreaterEqual(len(rows), 9, "the command table of docs/cli.md was not found")
        usage = help_text()
        for spans in rows:
            for span in spans:
                words = span.split()
                if words[1] == "--version":
                    self.assertIn("--version", usage)
                    continue
                command = words[1]
                self.assertRegex(usage, rf"\n  {command} ", f"`{span}`: no command {command} in tropical --help")
                known = help_text(command)
                for flag in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", " ".join(words[2:])):
                    self.assertRegex(known, rf"(?<![\w-]){re.escape(flag)}(?![\w-])",
                                     f"`{span}` names {flag}, which `tropical {command} --help` does not know")

    def test_every_results_citation_names_an_existing_section(self):
        titles = results_sections()
        self.assertIn("Current numbers", titles, "bench/RESULTS.md has no \"Current numbers\" section")
        cited_by_readme = False
        for path, text in documents():
            flat = " ".join(text.split())
            self.assertIsNone(re.search(r"RESULTS\.md`?,? \(?lines? \d+", flat),
                              f"{path} cites bench/RESULTS.md by line number; cite a section by name")
            for name in re.findall(r"`bench/RESULTS\.md`,? \(?\"([^\"]+)\"", flat):
                cited_by_readme |= path == "README.md"
                self.assertTrue(names_a_section(name, titles),
                                f"{path} cites bench/RESULTS.md, \"{name}\": no such section")
        self.assertTrue(cited_by_readme, "the README cites no section of bench/RESULTS.md for its figures")

    def test_the_readme_is_short_and_its_links_resolve(self):
        lines = readme().splitlines()
        self.assertLessEqual(len(lines), README_MAX_LINES,
                             f"README.md has {len(lines)} lines; move detail into docs/")
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", readme()):
            self.assertTrue(os.path.exists(os.path.join(SOURCE, target)), f"README links to {target}: no such file")

    def test_code_and_comments_carry_no_dates_or_issue_numbers(self):
        """History lives in CHANGELOG.md and bench/RESULTS.md: no file of the code's folders names an issue
        by number or a date (a heading of bench/RESULTS.md is cited by its words)."""
        issue = re.compile(r"\b[Ii]ssues? ?#?\d+|\bissue_\d+")
        date = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
        folders = ["src", "include", "python", "codegen", "templates", "tests", "tools", "examples"]
        tracked = subprocess.run(["git", "-C", SOURCE, "ls-files", "--", *folders], capture_output=True, text=True)
        if tracked.returncode != 0:
            self.skipTest("not a git checkout")
        for path in tracked.stdout.split():
            try:
                text = read(path)
            except (UnicodeDecodeError, FileNotFoundError):
                continue
            for number, line in enumerate(text.splitlines(), 1):
                found = issue.search(line) or date.search(line)
                self.assertIsNone(found, f"{path}:{number} names {found.group(0) if found else ''!r}: "
                                         "history belongs in CHANGELOG.md")

    def test_architecture_table_cells_are_short(self):
        rows = [line for line in read("ARCHITECTURE.md").splitlines() if line.startswith("|")]
        self.assertGreaterEqual(len(rows), 10, "ARCHITECTURE.md's table was not found")
        for row in rows:
            for cell in re.split(r"(?<!\\)\|", row.strip().strip("|")):
                self.assertLessEqual(len(cell.strip()), CELL_MAX_CHARS,
                                     f"ARCHITECTURE.md cell of {len(cell.strip())} characters: "
                                     f"{cell.strip()[:80]}...")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
