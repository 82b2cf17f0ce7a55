"""The product's one YAML loader and dumper (infra/yaml_io.py): libyaml's where PyYAML has it, safe either way,
and what one writes the other reads back as it was."""

from __future__ import annotations

import pytest
import yaml

from gpu_platform.infra.yaml_io import SAFE_DUMPER, SAFE_LOADER


def test_libyaml_is_used_where_pyyaml_was_built_with_it() -> None:
    if not getattr(yaml, "__with_libyaml__", False):
        pytest.skip("this PyYAML was built without libyaml: the pure-Python loader and dumper are the ones used")
    assert SAFE_LOADER is yaml.CSafeLoader and SAFE_DUMPER is yaml.CSafeDumper


def test_the_loader_refuses_a_tag_that_makes_a_python_object() -> None:
    with pytest.raises(yaml.constructor.ConstructorError):
        yaml.load("!!python/object/apply:os.system ['true']", Loader=SAFE_LOADER)


def test_what_the_dumper_writes_the_loader_reads_back_unchanged() -> None:
    document = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"on": "yes", "empty": "", "n": "007", "text": "a\nb"}, "list": [1, 2.5, None, True]}
    written = yaml.dump(document, Dumper=SAFE_DUMPER, sort_keys=False)
    assert yaml.load(written, Loader=SAFE_LOADER) == document
    assert written.startswith("apiVersion: v1\nkind: ConfigMap\n")  # key order kept: kubectl's, as the manifests are written
