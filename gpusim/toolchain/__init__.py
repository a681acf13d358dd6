"""CUDA toolchains: compile a workload's kernel to a cubin and disassemble it into a SASS listing."""
