"""Every documented default is the real default.

Each field's docstring ends with "Default: <value>." or says it is required. Where the
documented value is a literal (true, 100, STABLE, [], none, ...) it is compared with the
model's default here; the defaults described in words are asserted one by one below and
in the component tests (listed in DESCRIBED).
"""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from gpu_platform.components import (
    AutoscalingBounds,
    BoundsScope,
    ControlPlaneAccess,
    GpuGkeClusterArgs,
    GpuNodePoolArgs,
    SchedulerPoolArgs,
    SystemPoolArgs,
)
from gpu_platform.infra.docs import reachable_models
from gpu_platform.infra.simulate.prices import PriceTable
from gpu_platform.infra.simulate.settings import ModelSettings
from gpu_platform.infra.simulate.workloads import DeepDive, WorkloadFile
from gpu_platform.infra.stack.model import StackConfig
from tests.factories import gke, t4_pool

MODELS = [*reachable_models(StackConfig), *(m for root in (ModelSettings, DeepDive, WorkloadFile, PriceTable) for m in reachable_models(root))]

# Defaults described in words, and the test that pins each.
DESCRIBED = {
    (
        "ModelSettings",
        "reservation",
    ): "tests/infra/test_simulate_ladders.py::test_the_stack_s_reservation_rung_holds_the_pool_s_minimum_unless_the_model_says_otherwise",
    ("ModelSettings", "karpenter"): "tests/infra/test_simulate_karpenter.py::test_model_settings_default_to_karpenters_own_batching_and_a_monday_morning_start",
    ("ExistingClusterArgs", "context"): "tests/components/existing/test_cluster.py::test_without_a_kubeconfig_the_provider_reads_the_ambient_one",
    ("ExistingPoolArgs", "gpus_per_node"): "tests/components/existing/test_args.py::test_the_shapes_count_what_the_catalog_says_the_machines_hold",
    (
        "ExistingPoolArgs",
        "node_selector",
    ): "tests/components/existing/test_args.py::test_a_gke_pool_is_selected_by_its_node_pool_label_and_its_gpu_nodes_carry_gkes_gpu_taint_by_default",
    (
        "ExistingPoolArgs",
        "taints",
    ): "tests/components/existing/test_args.py::test_an_eks_group_is_selected_by_its_node_group_label_and_carries_no_taint_by_default",
    (
        "DatasetMountArgs",
        "access",
    ): "tests/components/datasets/test_args.py::test_a_mount_defaults_to_the_datasets_access_and_a_tenant_may_be_given_by_name",
    ("DatasetArgs", "mount_path"): "tests/components/datasets/test_args.py::test_dataset_defaults",
    (
        "FsxLustreArgs",
        "per_unit_storage_throughput",
    ): "tests/components/datasets/test_args.py::test_fsx_defaults_are_persistent_2_at_125_with_1200_gib",
    ("GcsFuseArgs", "mount_options"): "tests/components/datasets/test_args.py::test_gcs_fuse_defaults_to_implicit_dirs",
    ("GpuGkeClusterArgs", "project"): "tests/components/gke/test_cluster.py::test_project_defaults_to_the_provider_project",
    ("GpuGkeClusterArgs", "cluster_name"): "tests/components/gke/test_cluster.py::test_cluster_name_defaults_to_the_component_name",
    ("GpuGkeClusterArgs", "control_plane"): "test_control_plane_default_is_public_and_unrestricted",
    ("GpuGkeClusterArgs", "node_service_account_id"): "tests/components/gke/test_cluster.py::test_node_service_account_is_dedicated",
    ("GpuGkeClusterArgs", "system_pool"): "test_system_pool_default",
    ("GpuGkeClusterArgs", "node_locations"): "test_literal_defaults",
    ("_PoolBase", "location_policy"): "tests/components/gke/test_cluster.py::test_spot_pools_default_to_location_policy_any",
    ("_PoolBase", "node_locations"): "tests/components/gke/test_cluster.py::test_pool_zones_default_to_the_cluster_zones",
    ("GpuNodePoolArgs", "accelerator_count"): "test_accelerator_count_defaults_to_the_machine_type",
    ("SystemPoolArgs", "autoscaling"): "test_system_pool_default",
    ("SchedulerPoolArgs", "autoscaling"): "test_scheduler_pool_default",
    ("StackConfig", "monitoring"): "test_monitoring_defaults",
    ("MonitoringConfig", "prometheus"): "test_monitoring_defaults",
    ("PrometheusStackArgs", "alerts"): "test_monitoring_defaults",
    ("DcgmExporterArgs", "metrics"): "tests/components/monitoring/test_dcgm_args.py::test_default_metrics",
    ("OidcIssuer", "name"): "tests/components/kubeflow/test_install.py::test_oidc_transform_adds_the_connector_and_its_secret_env",
    ("EksClusterArgs", "cluster_name"): "tests/components/eks/test_args.py::test_eks_cluster_defaults",
    ("EksClusterArgs", "region"): "tests/components/eks/test_args.py::test_eks_cluster_defaults",
    ("EksClusterArgs", "endpoint"): "tests/components/eks/test_args.py::test_eks_cluster_defaults",
    ("EksClusterArgs", "addons"): "tests/components/eks/test_args.py::test_eks_cluster_defaults",
    ("EksClusterArgs", "system_node_group"): "tests/components/eks/test_args.py::test_eks_cluster_defaults",
    ("EksClusterArgs", "block_storage"): "tests/components/eks/test_args.py::test_eks_cluster_defaults",
    (
        "EksClusterArgs",
        "secrets_encryption",
    ): "tests/components/eks/test_access.py::test_defaults_encrypt_secrets_with_a_created_key_and_keep_the_bootstrap_admin",
    ("EksClusterArgs", "log_types"): "tests/components/eks/test_args.py::test_eks_cluster_defaults",
    ("SystemNodeGroupArgs", "instance_types"): "tests/components/eks/test_args.py::test_system_node_group_defaults",
    ("SpotFailoverEksNodeGroupsArgs", "autoscaler"): "tests/components/eks/test_node_group_args.py::test_autoscaler_defaults_are_the_seeds_failover",
    ("ClusterAutoscalerSettings", "expanders"): "tests/components/eks/test_node_group_args.py::test_autoscaler_defaults_are_the_seeds_failover",
    ("KubeflowConfig", "install"): "test_kubeflow_config_defaults",
    ("StackConfig", "headlamp"): "tests/components/headlamp/test_headlamp.py::test_the_stack_setting_is_off_by_default",
    ("HeadlampConfig", "viewer_group"): "tests/components/headlamp/test_headlamp.py::test_the_setting_is_off_by_default",
    ("SpotFailoverEksNodeGroupsArgs", "karpenter"): "tests/components/karpenter/test_args.py::test_karpenter_defaults",
    ("KarpenterSettings", "disruption"): "tests/components/karpenter/test_args.py::test_karpenter_defaults",
    ("KarpenterDisruption", "budgets"): "tests/components/karpenter/test_args.py::test_karpenter_defaults",
    ("DisruptionBudget", "nodes"): "tests/components/karpenter/test_args.py::test_karpenter_defaults",
    ("KubeflowInstallArgs", "training_pool"): "tests/components/kubeflow/test_args.py::test_kubeflow_defaults",
    ("TrainingPoolSelector", "taint"): "tests/components/kubeflow/test_args.py::test_kubeflow_defaults",
    ("AutoscalerModel", "scale_down_unneeded_time"): "tests/infra/test_simulate.py::test_the_stack_s_autoscaler_settings_fill_the_model",
    ("AutoscalerModel", "scale_down_delay_after_add"): "tests/infra/test_simulate.py::test_the_stack_s_autoscaler_settings_fill_the_model",
    ("AutoscalerModel", "max_node_provision_time"): "tests/infra/test_simulate.py::test_the_stack_s_autoscaler_settings_fill_the_model",
    ("AutoscalerModel", "initial_backoff"): "tests/infra/test_simulate.py::test_the_stack_s_autoscaler_settings_fill_the_model",
    ("AutoscalerModel", "max_backoff"): "tests/infra/test_simulate.py::test_the_stack_s_autoscaler_settings_fill_the_model",
    ("AutoscalerModel", "failure_report"): "tests/infra/test_simulate.py::test_model_defaults",
    ("NodeModel", "provision"): "tests/infra/test_simulate.py::test_model_defaults",
    ("NodeModel", "gpu_ready"): "tests/infra/test_simulate.py::test_model_defaults",
    ("NodeModel", "image_pull"): "tests/infra/test_simulate.py::test_model_defaults",
    ("NodeModel", "image_pull_streaming"): "tests/infra/test_simulate.py::test_model_defaults",
    ("NodeModel", "pod_start"): "tests/infra/test_simulate.py::test_model_defaults",
    ("SpotModel", "notice"): "tests/infra/test_simulate.py::test_the_stack_s_autoscaler_settings_fill_the_model",
    ("ModelSettings", "binding"): "tests/infra/test_simulate.py::test_the_stack_s_autoscaler_settings_fill_the_model",
    ("ModelSettings", "autoscaler"): "tests/infra/test_simulate.py::test_model_defaults",
    ("ModelSettings", "node"): "tests/infra/test_simulate.py::test_model_defaults",
    ("ModelSettings", "spot"): "tests/infra/test_simulate.py::test_model_defaults",
    ("DeepDive", "work"): "tests/infra/test_simulate.py::test_model_defaults",
    ("GpuInferenceServiceArgs", "ingress"): "tests/components/inference/test_args.py::test_inference_defaults",
    ("WorkloadFile", "hours"): "tests/infra/test_simulate.py::test_a_workload_file_repeats_by_hour",
}


def _fields() -> list[tuple[type[BaseModel], str]]:
    return [(m, name) for m in MODELS for name in m.model_fields]


def _documented(description: str) -> str | None:
    m = re.search(r"Default: (.*)\.$", description.strip())
    return m.group(1) if m else None


def _owner(model: type[BaseModel], name: str) -> str:
    for klass in model.__mro__:
        if name in getattr(klass, "__annotations__", {}):
            return klass.__name__
    return model.__name__


def _literal(text: str) -> tuple[bool, Any]:
    candidate = text.split(" (", 1)[0].strip()
    if candidate == '""':
        return True, ""
    candidate = candidate.strip('"')
    if candidate == "none":
        return True, None
    if re.fullmatch(r"[\w.\-:/@]+|\[\]|\{\}", candidate):
        return True, yaml.safe_load(candidate)
    return False, None


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


@pytest.mark.parametrize(("model", "name"), _fields(), ids=lambda v: getattr(v, "__name__", v))
def test_every_field_documents_its_default_or_that_it_is_required(model: type[BaseModel], name: str) -> None:
    field = model.model_fields[name]
    description = field.description or ""
    assert description, f"{model.__name__}.{name} has no docstring"
    required = field.is_required()
    documented = _documented(description)
    if required:
        assert "Required" in description, f"{model.__name__}.{name} is required but its docstring does not say so"
        assert documented is None
    else:
        assert documented is not None, f"{model.__name__}.{name}: docstring must end with 'Default: <value>.'"


@pytest.mark.parametrize(("model", "name"), _fields(), ids=lambda v: getattr(v, "__name__", v))
def test_literal_defaults(model: type[BaseModel], name: str) -> None:
    field = model.model_fields[name]
    documented = _documented(field.description or "")
    if documented is None:
        return
    is_literal, value = _literal(documented)
    if not is_literal:
        key = (_owner(model, name), name)
        assert key in DESCRIBED or (model.__name__, name) in DESCRIBED, (
            f"{model.__name__}.{name} documents '{documented}' in words: pin it with a test and list it in DESCRIBED"
        )
        return
    default = field.get_default(call_default_factory=True)
    if default is PydanticUndefined:
        pytest.fail(f"{model.__name__}.{name} documents a default but has none")
    if isinstance(default, (str, enum.Enum)) and not isinstance(value, str):
        value = str(value) if value is not None else None
    assert _plain(default) == value, f"{model.__name__}.{name}: documented {documented!r}, actual {default!r}"


def test_cluster_defaults_match_the_seed() -> None:
    args = GpuGkeClusterArgs.model_validate(gke())
    assert args.release_channel.value == "STABLE"
    assert args.autoscaling_profile.value == "OPTIMIZE_UTILIZATION"
    assert args.deletion_protection is True
    assert args.scheduler_pool is None


def test_pool_defaults() -> None:
    pool = GpuNodePoolArgs.model_validate(t4_pool())
    assert pool.image_type.value == "COS_CONTAINERD"
    assert pool.image_streaming is True
    assert pool.driver_version.value == "DEFAULT"
    assert pool.capacity.value == "on_demand"
    assert pool.disk_size_gb == 100


def test_control_plane_default_is_public_and_unrestricted() -> None:
    cp = GpuGkeClusterArgs.model_validate(gke()).control_plane
    assert cp == ControlPlaneAccess()
    assert not cp.private_nodes and not cp.private_endpoint and cp.authorized_networks == []
    assert not cp.restricted


def test_system_pool_default() -> None:
    pool = GpuGkeClusterArgs.model_validate(gke()).system_pool
    assert pool == SystemPoolArgs()
    assert pool.name == "system"
    assert pool.machine_type == "e2-standard-4"
    assert pool.autoscaling == AutoscalingBounds(scope=BoundsScope.PER_ZONE, min_nodes=1, max_nodes=3)
    assert pool.disk_size_gb == 50
    assert pool.taints == []


def test_scheduler_pool_default() -> None:
    pool = SchedulerPoolArgs()
    assert (pool.name, pool.machine_type, pool.accelerator_type, pool.accelerator_count) == (
        "scheduler",
        "n1-standard-2",
        "nvidia-tesla-t4",
        1,
    )
    assert pool.autoscaling == AutoscalingBounds(scope=BoundsScope.TOTAL, min_nodes=0, max_nodes=4)


def test_accelerator_count_defaults_to_the_machine_type() -> None:
    pool = GpuNodePoolArgs.model_validate(
        {"name": "l4", "machine_type": "g2-standard-48", "accelerator_type": "nvidia-l4", "autoscaling": {"scope": "total", "max_nodes": 2}}
    )
    assert pool.accelerator_count is None
    assert pool.gpus_per_node == 4


def test_autoscaling_min_defaults_to_zero() -> None:
    assert AutoscalingBounds(scope=BoundsScope.TOTAL, max_nodes=3).min_nodes == 0


def test_described_defaults_point_at_real_tests() -> None:
    from tests.conftest import PROJECT_DIR

    here = Path(__file__).read_text()
    for ref in DESCRIBED.values():
        path, _, name = ref.rpartition("::")
        text = (PROJECT_DIR / path).read_text() if path else here
        assert f"def {name}(" in text, ref


def test_monitoring_defaults() -> None:
    from gpu_platform.components import AlertSettings, PrometheusStackArgs
    from gpu_platform.infra.stack.model import MonitoringConfig

    config = StackConfig.model_validate({"cloud": "gcp", "gke": gke()})
    assert config.monitoring == MonitoringConfig()
    assert config.monitoring.enabled is True and config.monitoring.dcgm_exporter is None
    assert config.monitoring.prometheus == PrometheusStackArgs()
    assert PrometheusStackArgs().alerts == AlertSettings()


def test_kubeflow_config_defaults() -> None:
    from gpu_platform.components import KubeflowInstallArgs
    from gpu_platform.infra.stack.model import CapacityCheck, KubeflowConfig

    config = KubeflowConfig()
    assert config.install == KubeflowInstallArgs()
    assert config.capacity_check is CapacityCheck.REFUSE and config.system_reserve_percent == 30
    assert StackConfig.model_validate({"cloud": "gcp", "gke": gke()}).kubeflow is None
