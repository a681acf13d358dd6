"""The compiled timing engine: detailed mode's SM issue loop and memory path as numba functions
over arrays (struct of arrays), for speed at real sizes.

It is the object model of gpusim/timing/sm.py and gpusim/timing/mem/ (whose docstrings state the
hardware rules and their sources) written a second time, function for function, so that both give
the same results to the last bit: tests/test_compiled_engine.py replays cases covering every path
on both. The object model stays the reference, and runs what the compiled one does not: timelines
(`gpusim viz`) and sampled mode, whose sampler moves warps through Python objects.

    lru.py     the sector LRUs (L1, L2, the dirty list) of mem/l2.py's OrderedDicts
    memory.py  mem/: the sub-partitions' MIO/LSU queues, L1, L2, DRAM
    sm.py      sm.py: scheduling, issue, dual issue, scoreboards, barriers, CTA residency
    engine.py  the state arrays, simpy's event order across SMs, results for GPU._result

numba compiles these on first use and caches the machine code beside the sources (__pycache__).
"""
