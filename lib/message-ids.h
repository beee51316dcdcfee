/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fixed journal MESSAGE_IDs for auditable events. Never change a value: the
 * catalog (deploy/catalog/kmemctl.catalog) and operators' queries key on them.
 */
#ifndef KMEMCTL_MESSAGE_IDS_H
#define KMEMCTL_MESSAGE_IDS_H

#define MID_MITIGATION_APPLIED "3f7d67cc0198446a82197c924055d173"
#define MID_MITIGATION_REVERTED "dcf8c0aed1624d70929c65a86495fb4a"
#define MID_MITIGATION_TRIPPED "ffbb0e5cccc54f22bb9ffd9badf9c241"
#define MID_POLICY_ACCEPTED "b4d9dd0def914223af80a5e428916459"
#define MID_POLICY_REFUSED "2244bbd5d6ef4258a187c7f733f8e000"
#define MID_GUARD_REVERT "ac2d235267674863a5cc9f8162f8ab97"
#define MID_CHANGE_QUARANTINED "5db6ed295e0146f392963369fd6d1fa2"
#define MID_CONFIG_RELOADED "64887a52c41348fe82c82bb8d3d86dc4"
#define MID_HOST_ENROLLED "ee1595c1904640ab9f488f512dbeb713"
#define MID_ROLLOUT_VERDICT "befee60b1ca748f0a462bd4065664e61"

#endif
