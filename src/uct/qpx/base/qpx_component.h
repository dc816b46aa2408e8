/*
 * The qpx UCT component and the registration of its transports.
 */
#ifndef QPX_COMPONENT_H_
#define QPX_COMPONENT_H_

#include <ucs/ucx_compat.h>


/*
 * Register the component and every transport with UCX, once, if the UCX
 * loaded in this process is the one qpx was built for. Returns UCS_OK when
 * registered (now or before), UCS_ERR_UNSUPPORTED on a version mismatch.
 */
ucs_status_t qpx_component_register(void);

/*
 * The job this process belongs to, as its launcher tells it (qpx_job.c):
 * Open MPI's OMPI_COMM_WORLD_*, else Slurm's SLURM_*, else the PMIx
 * server's job data. What the hybrid transport sizes its defaults by. 0
 * where nobody says.
 */
typedef struct qpx_job_info {
    const char *launcher;   /* "mpirun", "slurm", "pmix" or "none" */
    unsigned   ntasks;      /* processes in the job */
    unsigned   nnodes;      /* hosts of the job */
    unsigned   local_tasks; /* processes of the job on this host */
    unsigned   rank;        /* this process's rank in the job */
} qpx_job_info_t;

void qpx_job_info_get(qpx_job_info_t *info);

/* Read UCX_QPX_JOB_* through UCX's parser, once per process (at the first
 * md open: before UCP checks for unused variables) */
void qpx_job_config_read(void);

/*
 * A 64-bit key of this job: a hash of its identity (SLURM_JOB_ID, else
 * PMIX_NAMESPACE, which Open MPI's mpirun and srun --mpi=pmix set, else
 * OMPI_MCA_ess_base_jobid) mixed into base, so that the processes of one
 * job share it and another job's do not. base itself where the launcher
 * names no job. *source_p: the variable it came from, or "none".
 */
uint64_t qpx_job_key(uint64_t base, const char **source_p);

/* Transports the component offers (NULL-terminated) */
extern uct_tl_t *const qpx_transports[];

/* The connection manager the component offers, defined above base like
 * the transports; open == NULL where qpx was built without librdmacm */
typedef struct qpx_component_cm {
    ucs_status_t       (*open)(uct_component_h component, uct_worker_h worker,
                               const uct_cm_config_t *config, uct_cm_h *cm_p);
    ucs_config_field_t *config_table;
    size_t             config_size;
} qpx_component_cm_t;

extern const qpx_component_cm_t qpx_component_cm;

#endif
