#!/bin/sh
# valgrind-kvsim.sh: build/kvsim under valgrind memcheck, for tests/cli.sh
# (make check-valgrind). Exit 99 on a memory error or leak.
exec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	"$(dirname "$0")/../build/kvsim" "$@"
