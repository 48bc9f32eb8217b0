# rep_order N REP: the order of N systems in repetition REP (from 1), as indices 0..N-1 on one
# line. A system run right after another pays for what that one left behind (its image's
# dirty pages reaching the host's disk, its timer's barrier), and rotating a fixed order moves
# who goes first but not who follows whom. So the orders are the rows of a Williams design
# (0, 1, N-1, 2, N-2, ... plus the row number, mod N), the first N repetitions taking the
# rows and the next N the rows reversed: over 2N repetitions every system goes first twice
# and runs right after every other one twice. The same as `rep_order` in
# bench/workloads/src/runner.rs (sourced by systems.sh and bench.sh).
rep_order() {
    local n=$1 r=$(($2 - 1)) i j b out=()
    for ((i = 0; i < n; i++)); do
        # Position i of the row, or of the reversed row in odd rounds of n repetitions.
        j=$i
        (((r / n) % 2 == 1)) && j=$((n - 1 - i))
        if ((j % 2 == 1)); then b=$(((j + 1) / 2)); else b=$(((n - j / 2) % n)); fi
        out+=($(((b + r) % n)))
    done
    echo "${out[@]}"
}
