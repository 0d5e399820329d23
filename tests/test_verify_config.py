"""Which config ``roundtrip verify`` re-makes a results folder with, and how a run names its
config files (``results/run.provenance.json``, the messages, page 1)."""
import json
import os

import pytest

from roundtrip.core.config import config_names, config_paths
from roundtrip.workflow.verify import RUN_RECORD, configs_of_run, run_record_text


def _record(folder, text):
    (folder / "results").mkdir(parents=True, exist_ok=True)
    (folder / RUN_RECORD).write_text(text)


def test_the_recorded_config_is_used_and_named(tmp_path):
    (tmp_path / "my.yaml").write_text("{}")
    _record(tmp_path, run_record_text(["my.yaml"]))
    assert json.loads((tmp_path / RUN_RECORD).read_text()) == {"configfiles": ["my.yaml"]}
    assert configs_of_run(tmp_path) == (["my.yaml"], f"recorded in {RUN_RECORD}")
    # given on the command line: it wins, named as the run would name it
    given = configs_of_run(tmp_path, tmp_path / "config.yaml")
    assert given == (["config.yaml"], "given with --configfile")


def test_a_plain_run_records_no_file_and_an_old_folder_falls_back_to_config_yaml(tmp_path):
    _record(tmp_path, run_record_text([]))
    assert configs_of_run(tmp_path) == ([], f"recorded in {RUN_RECORD}")
    (tmp_path / RUN_RECORD).unlink()
    files, why = configs_of_run(tmp_path)
    assert files == [] and why.startswith(f"the folder has no {RUN_RECORD}: config.yaml")


def test_a_recorded_config_that_is_gone_is_named(tmp_path):
    _record(tmp_path, run_record_text(["configs/mine.yaml"]))
    with pytest.raises(FileNotFoundError, match="the run read configs/mine.yaml, which is not"):
        configs_of_run(tmp_path)


def test_config_files_are_named_relative_to_the_working_directory(tmp_path):
    work = tmp_path / "work"
    (work / "configs").mkdir(parents=True)
    assert config_paths([work / "my.yaml", "configs/p.yaml"], str(work)) == \
        ["my.yaml", os.path.join("configs", "p.yaml")]
    assert config_paths([tmp_path / "elsewhere.yaml"], str(work)) == \
        [str(tmp_path / "elsewhere.yaml")]
    assert config_names([], str(work)) == "config.yaml"
    assert config_names([work / "a.yaml", work / "b.yaml"], str(work)) == "a.yaml, b.yaml"
