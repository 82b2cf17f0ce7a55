"""AwsLoadBalancerController: its Args, the chart values and IAM policy checks, and the component."""
