"""setuptools' build folder goes to a temporary directory, removed after the build: `pip wheel .` and `pip install .`
leave nothing in the working tree but the ignored *.egg-info (the project itself is configured in pyproject.toml)."""

import atexit
import shutil
import tempfile

from setuptools import setup
from setuptools.command.build import build


class OutOfTreeBuild(build):
    def initialize_options(self):
        super().initialize_options()
        self.build_base = tempfile.mkdtemp(prefix="frozen_sweep_build_")
        atexit.register(shutil.rmtree, self.build_base, ignore_errors=True)


setup(cmdclass={"build": OutOfTreeBuild})
