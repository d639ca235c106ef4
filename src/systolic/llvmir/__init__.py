"""The one LLVM-IR front door (REFERENCE.md section 8): clang compiles sources to IR (:mod:`.clang`), LLVM's own
parser and verifier read it (:mod:`.module`), and :mod:`.facts` reads what llvmlite only prints. The OpenCL/SPIR-V
interpreter (``systolic.cl``) and the AMX tile compiler (``systolic.compiler``) both enter here."""

from systolic.llvmir.clang import clang_version, compile_file, compile_source, find_clang
from systolic.llvmir.module import llvm_version, parse

__all__ = ["find_clang", "clang_version", "compile_source", "compile_file", "parse", "llvm_version"]
