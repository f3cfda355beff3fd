"""Backends that consume pto IR: the interpreter (executes), the cost model (times), targets (data)."""
