// A work-group sum with local memory and barriers: each work-group of 64 loads its values into __local memory
// and halves the active range until one sum is left (a tree reduction: divergent ifs between barriers).
// systolic-run: device pvc
// systolic-run: devices pvc bmg lnl dg2
// systolic-run: kernel reduce_sum
// systolic-run: global 256
// systolic-run: local 64
// systolic-run: buffer X:i32[256] = range
// systolic-run: buffer S:i32[4] = zeros
// systolic-run: args X S local:256
// systolic-run: expect S = 2016 6112 10208 14304

kernel void reduce_sum(global const int* x, global int* sums, local int* scratch)
{
    const int lid = get_local_id(0);
    scratch[lid] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s /= 2) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        sums[get_group_id(0)] = scratch[0];
}
