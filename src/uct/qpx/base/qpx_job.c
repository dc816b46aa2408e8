/*
 * The job this process belongs to, as its launcher tells it: the size the
 * hybrid transport's defaults follow (qpx_hybrid_iface.c) and the line
 * qpx logs at registration. Read once per process.
 *
 * In order: Open MPI's mpirun (OMPI_COMM_WORLD_*, also inside a Slurm
 * allocation: it knows its own job better), Slurm (SLURM_*), and a PMIx
 * launcher that sets neither (PMIX_NAMESPACE in the environment): its
 * server's job size, local size and node count (PMIx_Get of
 * PMIX_JOB_SIZE, PMIX_LOCAL_SIZE and PMIX_NUM_NODES for the job's
 * wildcard rank). Loading qpx must not start a PMIx client in a program
 * that did not ask for one, so PMIx is asked only when the process has
 * already initialised it (an MPI library did: libpmix is loaded and
 * PMIx_Initialized() says so), or when the user consents with
 * UCX_QPX_JOB_PMIX=y; libpmix is loaded with dlopen only then, so that the
 * plugin does not depend on it. Read when a transport first needs it (the
 * hybrid's and DC's defaults), never from the library constructor.
 *
 * UCX_QPX_JOB_* is read through UCX's parser (so that UCP does not report
 * it as an unused variable: it checks when its context is made, before any
 * interface opens) when the first qpx memory domain opens.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_component.h"

#include <ucs/ucx_compat.h>
#include <ucs/ucx_ops.h>
#include <ucs/config/parser.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(HAVE_PMIX)
#  include <pmix.h>
#endif


typedef struct qpx_job_config {
    int pmix;   /* may ask a PMIx server the program did not initialise */
} qpx_job_config_t;

static ucs_config_field_t qpx_job_config_table[] = {
    {"PMIX", "n",
     "Let qpx start a PMIx client of its own to learn the job's size when a "
     "PMIx launcher started the process (PMIX_NAMESPACE) and neither "
     "mpirun's nor Slurm's variables give it. Without it, PMIx is asked "
     "only when the program has initialised it (as an MPI library does).",
     ucs_offsetof(qpx_job_config_t, pmix), UCS_CONFIG_TYPE_BOOL},

    {NULL}
};

static ucs_config_global_list_entry_t qpx_job_config_entry = {
    .name   = "QPX job",
    .prefix = "QPX_JOB_",
    .table  = qpx_job_config_table,
    .size   = sizeof(qpx_job_config_t)
};

static qpx_job_config_t qpx_job_config;
static pthread_once_t qpx_job_config_once = PTHREAD_ONCE_INIT;
static qpx_job_info_t qpx_job_info;
static pthread_once_t qpx_job_once = PTHREAD_ONCE_INIT;


static void qpx_job_config_init(void)
{
    /* A value the parser refuses is logged by it; PMIx is then not asked */
    if (qpx_ucx_config_fill(&qpx_job_config, &qpx_job_config_entry,
                            "UCX_") != UCS_OK) {
        ucs_warn("qpx job: invalid UCX_QPX_JOB_* setting (expected "
                 "UCX_QPX_JOB_PMIX=y or n); PMIx is not asked");
        qpx_job_config.pmix = 0;
    }
    /* Kept for the process's life: its fields hold nothing to release */
}

void qpx_job_config_read(void)
{
    (void)pthread_once(&qpx_job_config_once, qpx_job_config_init);
}


/* An unsigned from the environment; 0 when unset or not a number */
static unsigned qpx_job_env(const char *name)
{
    const char *value = getenv(name);
    unsigned long n;
    char *end;

    if ((value == NULL) || (*value == '\0')) {
        return 0;
    }
    n = strtoul(value, &end, 10);
    /* SLURM_TASKS_PER_NODE is "2(x3),1": its first count is this host's
     * on a homogeneous job */
    return ((end != value) && (n <= UINT_MAX)) ? (unsigned)n : 0;
}

#if defined(HAVE_PMIX)
typedef struct qpx_job_pmix {
    pmix_status_t (*init)(pmix_proc_t *proc, pmix_info_t *info, size_t n);
    pmix_status_t (*get)(const pmix_proc_t *proc, const char key[],
                         const pmix_info_t info[], size_t n,
                         pmix_value_t **val);
    pmix_status_t (*finalize)(const pmix_info_t info[], size_t n);
    void          (*value_destruct)(pmix_value_t *val);
} qpx_job_pmix_t;

/* A uint32 of the job (the wildcard rank of proc's namespace); 0 if none */
static unsigned qpx_job_pmix_u32(const qpx_job_pmix_t *pmix,
                                 const pmix_proc_t *job, const char *key)
{
    pmix_value_t *val = NULL;
    unsigned result   = 0;

    if ((pmix->get(job, key, NULL, 0, &val) != PMIX_SUCCESS) ||
        (val == NULL)) {
        ucs_debug("qpx job: PMIx_Get(%s) gave nothing", key);
        return 0;
    }
    if (val->type == PMIX_UINT32) {
        result = val->data.uint32;
    }
    /* PMIX_VALUE_RELEASE, whose pmix_free is free(3) */
    pmix->value_destruct(val);
    free(val);
    return result;
}

/* libpmix, when this process may use it: already initialised by the
 * program, or the user consents (UCX_QPX_JOB_PMIX=y); NULL otherwise */
static void *qpx_job_pmix_open(void)
{
    int (*initialized)(void);
    void *lib;

    lib = dlopen("libpmix.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (lib != NULL) {
        initialized = (int (*)(void))dlsym(lib, "PMIx_Initialized");
        if ((initialized != NULL) && initialized()) {
            return lib;
        }
        dlclose(lib);
    }

    qpx_job_config_read();
    if (!qpx_job_config.pmix) {
        ucs_debug("qpx job: PMIX_NAMESPACE is set but the process has not "
                  "initialised PMIx; not asking it (UCX_QPX_JOB_PMIX=y "
                  "allows qpx to)");
        return NULL;
    }

    lib = dlopen("libpmix.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        ucs_debug("qpx job: libpmix.so.2 cannot be loaded: %s", dlerror());
    }
    return lib;
}

/* Fill info from the PMIx server of this process; 0 when there is none */
static int qpx_job_pmix_get(qpx_job_info_t *info)
{
    qpx_job_pmix_t pmix;
    pmix_proc_t me, job;
    void *lib;

    lib = qpx_job_pmix_open();
    if (lib == NULL) {
        return 0;
    }

    /* Kept loaded: PMIx_Finalize of the last user stops its threads, and
     * the process (an MPI library) may use it again */
    pmix.init           = (void*)dlsym(lib, "PMIx_Init");
    pmix.get            = (void*)dlsym(lib, "PMIx_Get");
    pmix.finalize       = (void*)dlsym(lib, "PMIx_Finalize");
    pmix.value_destruct = (void*)dlsym(lib, "PMIx_Value_destruct");
    if ((pmix.init == NULL) || (pmix.get == NULL) ||
        (pmix.finalize == NULL) || (pmix.value_destruct == NULL)) {
        ucs_debug("qpx job: libpmix.so.2 lacks PMIx_Init, PMIx_Get, "
                  "PMIx_Finalize or PMIx_Value_destruct");
        return 0;
    }

    /* Reference-counted: an MPI library initialised before or after us
     * keeps its own reference */
    if (pmix.init(&me, NULL, 0) != PMIX_SUCCESS) {
        ucs_debug("qpx job: PMIx_Init failed: no PMIx server");
        return 0;
    }

    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    info->ntasks      = qpx_job_pmix_u32(&pmix, &job, PMIX_JOB_SIZE);
    info->local_tasks = qpx_job_pmix_u32(&pmix, &job, PMIX_LOCAL_SIZE);
    info->nnodes      = qpx_job_pmix_u32(&pmix, &job, PMIX_NUM_NODES);
    info->rank        = me.rank;
    pmix.finalize(NULL, 0);
    return info->ntasks > 0;
}
#endif

static void qpx_job_info_init(void)
{
    qpx_job_info_t *info = &qpx_job_info;

    memset(info, 0, sizeof(*info));
    info->launcher = "none";
    if (getenv("SLURM_JOB_ID") != NULL) {
        info->launcher    = "slurm";
        info->ntasks      = qpx_job_env("SLURM_NTASKS");
        info->nnodes      = qpx_job_env("SLURM_JOB_NUM_NODES");
        info->local_tasks = qpx_job_env("SLURM_TASKS_PER_NODE");
        info->rank        = qpx_job_env("SLURM_PROCID");
    }
    /* mpirun (also inside a Slurm allocation) knows its own job better */
    if (getenv("OMPI_COMM_WORLD_SIZE") != NULL) {
        info->launcher    = "mpirun";
        info->ntasks      = qpx_job_env("OMPI_COMM_WORLD_SIZE");
        info->local_tasks = qpx_job_env("OMPI_COMM_WORLD_LOCAL_SIZE");
        info->rank        = qpx_job_env("OMPI_COMM_WORLD_RANK");
        if ((info->nnodes == 0) && (info->local_tasks > 0)) {
            info->nnodes = (info->ntasks + info->local_tasks - 1) /
                           info->local_tasks;
        }
    }
#if defined(HAVE_PMIX)
    if ((info->ntasks == 0) && (getenv("PMIX_NAMESPACE") != NULL) &&
        qpx_job_pmix_get(info)) {
        info->launcher = "pmix";
    }
#endif
    ucs_debug("qpx job: launcher %s, %u processes on %u hosts, %u here, "
              "rank %u (SLURM_JOB_ID=%s)", info->launcher, info->ntasks,
              info->nnodes, info->local_tasks, info->rank,
              getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "-");
}

void qpx_job_info_get(qpx_job_info_t *info)
{
    (void)pthread_once(&qpx_job_once, qpx_job_info_init);
    *info = qpx_job_info;
}

uint64_t qpx_job_key(uint64_t base, const char **source_p)
{
    /* In order: a Slurm job covers all its steps (and an mpirun inside
     * it); PMIx's namespace is the job of mpirun or srun --mpi=pmix */
    static const char *sources[] = {"SLURM_JOB_ID", "PMIX_NAMESPACE",
                                    "OMPI_MCA_ess_base_jobid"};
    const unsigned char *p;
    const char *value;
    uint64_t hash;
    unsigned i;

    for (i = 0; i < sizeof(sources) / sizeof(sources[0]); ++i) {
        value = getenv(sources[i]);
        if ((value == NULL) || (*value == '\0')) {
            continue;
        }
        /* FNV-1a over the identity, then base mixed in */
        hash = 0xcbf29ce484222325ull;
        for (p = (const unsigned char*)value; *p != '\0'; ++p) {
            hash = (hash ^ *p) * 0x100000001b3ull;
        }
        *source_p = sources[i];
        return hash ^ base;
    }
    *source_p = "none";
    return base;
}
