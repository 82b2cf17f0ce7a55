"""GCP `prices refresh` checks, run in a process of their own by tests/infra/test_prices.py
(google-cloud-billing's protos cannot share a process with the Pulumi SDK's: both define
google.rpc.Status). ``python -m tests.infra.billing_check CASE...`` prints ``ok CASE`` for each case that passes."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from google.cloud import billing_v1

from gpu_platform.infra.simulate.prices import HourlyPrice
from gpu_platform.infra.simulate.refresh import COMPUTE_ENGINE, CloudError, gcp_prices


def _sku(description: str, regions: list[str], usd: float, unit: str = "h", usage: str = "OnDemand") -> Any:
    from google.type import money_pb2

    units = int(usd)
    money = money_pb2.Money(currency_code="USD", units=units, nanos=round((usd - units) * 1e9))
    return billing_v1.Sku(
        name=f"services/6F81-5844-456A/skus/{abs(hash(description)) % 10**6}",
        sku_id=str(abs(hash(description)) % 10**6),
        description=description,
        service_regions=regions,
        category=billing_v1.Category(service_display_name="Compute Engine", resource_family="Compute", resource_group="CPU", usage_type=usage),
        pricing_info=[
            billing_v1.PricingInfo(
                pricing_expression=billing_v1.PricingExpression(
                    usage_unit=unit,
                    tiered_rates=[billing_v1.PricingExpression.TierRate(start_usage_amount=0, unit_price=money)],
                )
            )
        ],
    )


class _Catalog:
    """A CloudCatalogClient's list_skus, answering the library's own Sku messages."""

    def __init__(self, skus: list[Any]) -> None:
        self.skus = skus
        self.asked: list[str] = []

    def list_skus(self, parent: str) -> list[Any]:
        self.asked.append(parent)
        return self.skus


def machines_from_their_skus() -> None:
    ew4 = ["europe-west4"]
    client = _Catalog(
        [
            _sku("G2 Instance Core running in Netherlands", ew4, 0.024),
            _sku("G2 Instance Ram running in Netherlands", ew4, 0.0028, "GiBy.h"),
            _sku("Nvidia L4 GPU running in Netherlands", ew4, 0.56),
            _sku("Spot Preemptible G2 Instance Core running in Netherlands", ew4, 0.01, usage="Preemptible"),
            _sku("Spot Preemptible G2 Instance Ram running in Netherlands", ew4, 0.001, "GiBy.h", usage="Preemptible"),
            _sku("Nvidia L4 GPU attached to Spot Preemptible VMs running in Netherlands", ew4, 0.2, usage="Preemptible"),
            _sku("N1 Predefined Instance Core running in Americas", ["us-central1", "us-east1"], 0.031611),
            _sku("N1 Predefined Instance Ram running in Americas", ["us-central1", "us-east1"], 0.004237, "GiBy.h"),
            _sku("Nvidia Tesla T4 GPU running in Americas", ["us-central1"], 0.35),
            _sku("Commitment v1: Nvidia Tesla T4 GPU running in Americas for 1 Year", ["us-central1"], 0.2, usage="Commit1Yr"),
            _sku("A3 Instance Core running in Americas", ["us-central1"], 0.02),
            _sku("A3 Instance Ram running in Americas", ["us-central1"], 0.002, "GiBy.h"),
            _sku("Nvidia H100 80GB GPU running in Americas", ["us-central1"], 10.0),
            _sku("SSD backed Local Storage in Americas", ["us-central1"], 0.08, "GiBy.mo"),
        ]
    )
    machines, gpus = gcp_prices(client)
    assert client.asked == [COMPUTE_ENGINE]
    g2 = machines["europe-west4"]["g2-standard-4"]
    assert g2.on_demand == pytest.approx(4 * 0.024 + 16 * 0.0028 + 0.56)
    assert g2.spot == pytest.approx(4 * 0.01 + 16 * 0.001 + 0.2)
    n1 = machines["us-central1"]["n1-standard-4"]
    assert n1.on_demand == pytest.approx(4 * 0.031611 + 15 * 0.004237, abs=1e-5) and n1.spot is None
    assert gpus == {"us-central1": {"nvidia-tesla-t4": HourlyPrice(on_demand=0.35)}}  # the commitment SKU is no price
    # A3 holds its 8 GPUs and the 6000 GB local SSD it comes with (billed per GiB-month, 730 h).
    a3 = machines["us-central1"]["a3-highgpu-8g"]
    assert a3.on_demand == pytest.approx(208 * 0.02 + 1872 * 0.002 + 8 * 10.0 + 6000 * 0.08 / 730, abs=1e-4)
    # Where a SKU a type needs is missing, the type is not priced there (no G2 in us-central1, no A3 in us-east1).
    assert "g2-standard-4" not in machines["us-central1"] and "a3-highgpu-8g" not in machines["us-east1"]


def a_google_api_error_is_one_line() -> None:
    from google.api_core import exceptions

    class Refusing:
        def list_skus(self, parent: str) -> list[Any]:
            raise exceptions.PermissionDenied("Cloud Billing API has not been used in project 1 before or it is disabled.")

    with pytest.raises(CloudError) as exc:
        gcp_prices(Refusing())
    assert str(exc.value) == (
        "cannot ask Google Cloud Billing: PermissionDenied: 403 Cloud Billing API has not been used in project 1 before or it is disabled."
    )


CASES = {"machines_from_their_skus": machines_from_their_skus, "a_google_api_error_is_one_line": a_google_api_error_is_one_line}


if __name__ == "__main__":
    # Every case named, in one process (the billing client's import is most of a case's time): one line each,
    # "ok CASE" or "failed CASE" with its traceback on standard error, so each test reports its own.
    import traceback

    for case in sys.argv[1:]:
        try:
            CASES[case]()
        except (AssertionError, pytest.fail.Exception):  # a case's check failed; anything else ends the process
            print(f"failed {case}", flush=True)
            print(f"--- {case}", file=sys.stderr)
            traceback.print_exc()
        else:
            print(f"ok {case}", flush=True)
