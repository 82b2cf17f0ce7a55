"""DaskOperator: its Args (tenants, notebooks, shared clusters), the mapping to chart values, and the component."""
