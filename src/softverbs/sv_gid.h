/*
 * softverbs ports: link layers and GID tables, the GID checks of RoCE
 * traffic (sv_gid.c), a port taken down and up (sv_port.c). Included at
 * the end of sv.h, whose types it uses.
 */
#ifndef SV_GID_H
#define SV_GID_H

/* a port taken down and up (sv_port.c) */
int sv_port_is_up(int dev, uint8_t port);

/* ports' link layers and GID tables, the GID checks of RoCE (sv_gid.c) */
void sv_gid_init(int nports);
/* this host's RoCE addresses into the registry (after sv_devices_init) */
void sv_gid_publish(void);
uint32_t sv_gid_tag(int nports);
int  sv_port_is_eth(uint8_t port);
int  sv_gid_tbl_len(uint8_t port);
int  sv_gid_entry(int dev, uint8_t port, unsigned index, union ibv_gid *gid,
                  int *type);
int  sv_gid_find(int dev, uint8_t port, const union ibv_gid *gid, int type);
uint32_t sv_gid_ifindex(uint8_t port);
const char *sv_gid_netdev(uint8_t port);
enum ibv_mtu sv_gid_active_mtu(uint8_t port);
int  sv_gid_sgid_valid(uint8_t port, unsigned index);
int  sv_gid_route(const struct sv_shm_qp *sq, unsigned sgid_index, int has_grh,
                  const union ibv_gid *dgid, const struct sv_shm_qp *dq);
void sv_gid_build_roce_grh(const struct sv_shm_qp *sq, unsigned sgid_index,
                           const union ibv_gid *dgid, uint32_t paylen,
                           struct ibv_grh *grh);
int  sv_gid_parse_roce_grh(const struct ibv_grh *grh, union ibv_gid *sgid,
                           union ibv_gid *dgid, int *type);

#endif
