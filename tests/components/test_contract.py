"""One constructor shape for every component: Foo(name, args, opts=None, *, <live inputs>)."""

from __future__ import annotations

import inspect

import pulumi
import pytest

from gpu_platform import components

COMPONENTS = [
    getattr(components, name)
    for name in components.__all__
    if isinstance(getattr(components, name), type) and issubclass(getattr(components, name), pulumi.ComponentResource)
]


@pytest.mark.parametrize("cls", COMPONENTS, ids=lambda c: c.__name__)
def test_every_component_takes_name_args_opts_then_keyword_only_live_inputs(cls: type) -> None:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    positional = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert [p.name for p in positional] == ["name", "args", "opts"], cls.__name__
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in positional)
    assert positional[2].default is None
    args_type = positional[1].annotation
    assert (args_type if isinstance(args_type, str) else args_type.__name__) == f"{cls.__name__}Args"
    assert not [p for p in params if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]


@pytest.mark.parametrize("cls", COMPONENTS, ids=lambda c: c.__name__)
def test_the_args_model_is_frozen_strict_and_documented(cls: type) -> None:
    args_type = getattr(components, f"{cls.__name__}Args")
    config = args_type.model_config
    assert config.get("extra") == "forbid" and config.get("frozen") is True
    undocumented = [name for name, field in args_type.model_fields.items() if not field.description]
    assert not undocumented, f"{args_type.__name__}: fields without a docstring: {undocumented}"


SECRETS = {
    "PrometheusStack": ["grafana_admin_password"],
    "KubeflowInstall": ["dex_password_hash", "oidc_client_secret"],
    "ExistingCluster": ["kubeconfig"],
}


@pytest.mark.parametrize(("component", "names"), SECRETS.items())
def test_secrets_are_keyword_only_pulumi_inputs(component: str, names: list[str]) -> None:
    params = inspect.signature(getattr(components, component).__init__).parameters
    for name in names:
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert "pulumi.Input[str]" in str(params[name].annotation)
