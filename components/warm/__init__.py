"""WarmCapacity: warm GPU capacity per pool, its Args and the component."""
