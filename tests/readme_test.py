"""README.md against the code it describes:

- the C++ example in the README is examples/first_product/first_product.cpp, verbatim (that file is built
  and run by the `first_product` test);
- every command and flag named in the command table ("## The `tropical` command") is one that
  `tropical --help` and `tropical COMMAND --help` name;
- every line of bench/RESULTS.md it cites exists and holds a figure;
- the quick start installs the same Debian packages as .ci/run (a new user and CI get the same).

Usage: readme_test.py SOURCE_ROOT PATH_TO_TROPICAL
"""

import os
import re
import subprocess
import sys
import unittest

SOURCE, TROPICAL = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
EXAMPLE = os.path.join("examples", "first_product", "first_product.cpp")


def readme():
    with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as f:
        return f.read()


def help_text(*args):
    proc = subprocess.run([TROPICAL, *args, "--help"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise AssertionError(f"tropical {' '.join(args)} --help exited {proc.returncode}: {proc.stderr}")
    return proc.stdout


def command_table(text):
    """The code spans of the first column of the command table, one list per row."""
    section = text.split("## The `tropical` command", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `tropical")]
    return [re.findall(r"`(tropical[^`]*)`", row.split(" | ")[0]) for row in rows]


class ReadmeTest(unittest.TestCase):
    def test_the_quick_start_installs_what_ci_installs(self):
        installs = re.findall(r"apt-get install -y ([^&\n]+)", readme())
        self.assertTrue(installs, "no apt-get install in the README")
        with open(os.path.join(SOURCE, ".ci", "run"), encoding="utf-8") as f:
            ci = re.search(r'^packages="([^"]+)"', f.read(), re.M)
        self.assertIsNotNone(ci, ".ci/run has no packages= line")
        for line in installs:
            self.assertEqual(sorted(line.split()), sorted(ci.group(1).split()),
                             "README's apt-get install and .ci/run's packages differ")

    def test_the_cpp_example_is_the_file_the_tests_build(self):
        with open(os.path.join(SOURCE, EXAMPLE), encoding="utf-8") as f:
            example = f.read().strip()
        blocks = re.findall(r"```cpp\n(.*?)```", readme(), re.S)
        self.assertIn(example, [b.strip() for b in blocks], f"README's C++ example differs from {EXAMPLE}")

    def test_every_command_and_flag_of_the_command_table_is_in_help(self):
        rows = command_table(readme())
        self.assertGreaterEqual(len(rows), 9, "the command table was not found")
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

    def test_every_results_line_the_readme_cites_holds_a_figure(self):
        with open(os.path.join(SOURCE, "bench", "RESULTS.md"), encoding="utf-8") as f:
            results = f.read().splitlines()
        text = " ".join(readme().split())
        cited = re.findall(r"`bench/RESULTS\.md`,? lines? (\d+)(?:[–-](\d+))?", text)
        self.assertTrue(cited, "the README cites no line of bench/RESULTS.md")
        for first, last in cited:
            for number in range(int(first), int(last or first) + 1):
                self.assertLessEqual(number, len(results), f"bench/RESULTS.md has no line {number}")
                self.assertRegex(results[number - 1], r"\d", f"bench/RESULTS.md line {number} holds no figure: "
                                 "a section was inserted above it; cite the new line")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
