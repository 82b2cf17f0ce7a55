"""Outputs are documented where users look: help(), the component reference, and the class."""

from __future__ import annotations

import ast
import inspect
import pydoc
import textwrap

import pulumi
import pytest

from gpu_platform import components
from gpu_platform.components.core.outputs import ComponentOutput, component_outputs, document_outputs
from gpu_platform.infra.docs import component_reference

COMPONENTS = [
    getattr(components, name)
    for name in components.__all__
    if isinstance(getattr(components, name), type) and issubclass(getattr(components, name), pulumi.ComponentResource)
]


def _assigned_outputs(cls: type) -> set[str]:
    """Public attributes the constructor assigns on self (what users can read off the component)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    found: set[str] = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                if not target.attr.startswith("_"):
                    found.add(target.attr)
    return found


def test_every_component_is_found() -> None:
    assert {c.__name__ for c in COMPONENTS} >= {
        "GpuGkeCluster",
        "EksCluster",
        "SpotFailoverEksNodeGroups",
        "PrometheusStack",
        "DcgmExporter",
        "GpuUtilizationAutoscaler",
        "DaskOperator",
        "KubeflowInstall",
    }


@pytest.mark.parametrize("cls", COMPONENTS, ids=lambda c: c.__name__)
def test_every_output_is_declared_and_described(cls: type[pulumi.ComponentResource]) -> None:
    declared = {o.name: o for o in component_outputs(cls)}
    assert declared, f"{cls.__name__} declares no outputs"
    undocumented = sorted(name for name, o in declared.items() if not o.description)
    assert not undocumented, f"{cls.__name__}: outputs without a docstring: {undocumented}"
    undeclared = sorted(_assigned_outputs(cls) - set(declared))
    assert not undeclared, f"{cls.__name__} assigns outputs it does not declare: {undeclared}"


@pytest.mark.parametrize("cls", COMPONENTS, ids=lambda c: c.__name__)
def test_help_lists_every_output(cls: type[pulumi.ComponentResource]) -> None:
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    section = text.split("Outputs:", 1)[1].split("Method resolution order", 1)[0]
    for output in component_outputs(cls):
        assert f"{output.name} (" in section, output.name
        assert output.description.split()[0] in section


@pytest.mark.parametrize("cls", COMPONENTS, ids=lambda c: c.__name__)
def test_the_reference_lists_every_output(cls: type[pulumi.ComponentResource]) -> None:
    reference = component_reference()
    part = reference.split(f"## {cls.__name__}\n", 1)[1].split("\n## ", 1)[0]
    for output in component_outputs(cls):
        assert f"| `{output.name}` |" in part


def test_outputs_are_read_in_order_with_bases_first() -> None:
    class Base(pulumi.ComponentResource):
        """A base."""

        first: pulumi.Output[str]
        """The first."""
        shared: str
        """The base's view."""

    class Child(Base):
        """A child."""

        second: int
        """The
        second."""
        shared: str
        """The child's view."""
        _hidden: int
        """Not an output."""

    assert component_outputs(Child) == (
        ComponentOutput("first", "pulumi.Output[str]", "The first."),
        ComponentOutput("second", "int", "The second."),
        ComponentOutput("shared", "str", "The child's view."),
    )
    document_outputs(Child)
    document_outputs(Child)  # idempotent
    assert Child.__doc__ is not None and Child.__doc__.count("Outputs:") == 1
    assert "second (int):\n        The second." in Child.__doc__


class _Outer:
    class Nested(pulumi.ComponentResource):
        """A component declared inside a class."""

        inner: str
        """Read by its qualified name."""


def test_outputs_are_found_by_qualified_name_and_a_class_without_source_has_none() -> None:
    """A nested class is found in its file by ``Outer.Nested`` (not a same-named class elsewhere in it); a class
    made in memory has no source and so no outputs, and nothing fails."""

    def factory() -> type:
        class Nested(pulumi.ComponentResource):
            local: int
            """Declared in a function."""

        return Nested

    assert component_outputs(_Outer.Nested) == (ComponentOutput("inner", "str", "Read by its qualified name."),)
    assert component_outputs(factory()) == (ComponentOutput("local", "int", "Declared in a function."),)
    made = type("Made", (pulumi.ComponentResource,), {"__annotations__": {"x": int}})
    assert component_outputs(made) == ()
