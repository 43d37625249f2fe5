"""Redis: the job queue, the fan-out record, execution leases and their Lua scripts.

Every key they use is named in ``freshmark.adapters.keys``.
"""
