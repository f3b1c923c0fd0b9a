"""Compiler options for small programs that run only a few times each: group sampling and
membership, and the checker's relation evaluators.

For such programs compiling is most of the cost. XLA's backend optimisations cost far
more compile time (2-7x on CPU) than they save at run time, and on the CPU the elemental
fusion emitters compile the same programs about 2.5x faster than the MLIR-based ones
(both implement the same HLO semantics). Eigen's intra-op thread pool is off: the
programs are small, and on CPU it can wedge on large vmapped graphs (a hang in
`block_until_ready` with every thread idle). Options named `xla_cpu_*` have no effect on
other backends.

The environment variable `TAXDL_CHECK_XLA` (a JSON object of XLA options), read at
import, replaces these options.
"""

import json
import os

SMALL_PROGRAM_OPTIONS: dict = json.loads(os.environ.get("TAXDL_CHECK_XLA", "null")) or {
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_parallel_codegen_split_count": 1,
    "xla_cpu_multi_thread_eigen": False,
    "xla_cpu_use_fusion_emitters": False,
}
