/* The CPU baseline of examples/fft3d.rs (issue 10, the paper's claim against a CPU
 * library): FFTW's MPI 3-D complex single-precision FFT of N x N x N, slab-distributed
 * over the ranks, out of place with the transposed output (FFTW_MPI_TRANSPOSED_OUT, the
 * layout the Parray program leaves too), planned with FFTW_MEASURE. Prints the median of
 * the repeats after a warm-up, timed with MPI_Wtime between barriers.
 *
 *   mpicc -O2 -o fftw_mpi_fft3d tools/fftw_mpi_fft3d.c -lfftw3f_mpi -lfftw3f -lm
 *   mpirun -n 16 ./fftw_mpi_fft3d 512 10
 */
#include <fftw3-mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    fftwf_mpi_init();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const ptrdiff_t n = argc > 1 ? atol(argv[1]) : 512;
    const int repeats = argc > 2 ? atoi(argv[2]) : 10;
    ptrdiff_t local_n0, local_0_start, local_n1, local_1_start;
    ptrdiff_t alloc = fftwf_mpi_local_size_3d_transposed(n, n, n, MPI_COMM_WORLD, &local_n0,
                                                         &local_0_start, &local_n1, &local_1_start);
    fftwf_complex *in = fftwf_alloc_complex(alloc), *out = fftwf_alloc_complex(alloc);
    double t0 = MPI_Wtime();
    fftwf_plan plan = fftwf_mpi_plan_dft_3d(n, n, n, in, out, MPI_COMM_WORLD, FFTW_FORWARD,
                                            FFTW_MEASURE | FFTW_MPI_TRANSPOSED_OUT);
    double planning = MPI_Wtime() - t0;
    /* Fresh input after planning (FFTW_MEASURE overwrites it). */
    for (ptrdiff_t i = 0; i < local_n0 * n * n; i++) {
        unsigned long long s = (unsigned long long)(local_0_start * n * n + i + 1) * 0x9E3779B97F4A7C15ull;
        in[i][0] = (float)((s >> 40) & 0xffffff) / 16777216.0f - 0.5f;
        in[i][1] = (float)((s >> 16) & 0xffffff) / 16777216.0f - 0.5f;
    }
    double *times = malloc(sizeof(double) * (repeats + 1));
    for (int r = 0; r < repeats + 1; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        fftwf_execute(plan);
        MPI_Barrier(MPI_COMM_WORLD);
        times[r] = (MPI_Wtime() - start) * 1e3;
    }
    qsort(times + 1, repeats, sizeof(double), by_value);
    if (rank == 0)
        printf("fftw-mpi N=%td ranks=%d: %.3f ms (median of %d after a warm-up; planning %.1f s)\n",
               n, size, times[1 + repeats / 2], repeats, planning);
    fftwf_destroy_plan(plan);
    fftwf_free(in);
    fftwf_free(out);
    free(times);
    fftwf_mpi_cleanup();
    MPI_Finalize();
    return 0;
}
