// Divergent control flow: each work-item counts the Collatz steps of its own number (a loop whose trip count
// and branches differ per work-item); the sub-group then reconverges for sub_group_reduce_add.
// systolic-run: device pvc
// systolic-run: devices pvc bmg lnl dg2
// systolic-run: kernel collatz
// systolic-run: global 32
// systolic-run: local 32
// systolic-run: buffer STEPS:i32[32] = zeros
// systolic-run: buffer TOTAL:i32[32] = zeros
// systolic-run: args STEPS TOTAL
// systolic-run: expect TOTAL = 137 137 137 137 137 137 137 137 137 137 137 137 137 137 137 137 415 415 415 415 415 415 415 415 415 415 415 415 415 415 415 415
// systolic-run: expect STEPS = 0 1 7 2 5 8 16 3 19 6 14 9 9 17 17 4 12 20 20 7 7 15 15 10 23 10 111 18 18 18 106 5

__attribute__((intel_reqd_sub_group_size(16)))
kernel void collatz(global int* steps, global int* total)
{
    const int i = get_global_id(0);
    uint n = i + 1;
    int c = 0;
    while (n != 1) {
        if (n % 2 == 0)
            n /= 2;
        else
            n = 3 * n + 1;
        c++;
    }
    steps[i] = c;
    total[i] = sub_group_reduce_add(c);      // every work-item of the sub-group is here again
}
