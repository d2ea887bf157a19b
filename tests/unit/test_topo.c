/* SPDX-License-Identifier: BSD-3-Clause */
/* The topology: NCCL's XML read, refused and written back (topo/xml.c); path types and the
 * GPU->NIC choice on the topology files of tests/topo and on a fake sysfs tree (topo/detect.c,
 * topo/topo.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness.h"
#include "topo/detect.h"
#include "topo/topo.h"
#include "topo/xml.h"

static struct topo_system* load(const char* name, const struct topo_opts* opts) {
  char path[1024];
  struct topo_xml* x = NULL;
  struct topo_system* s = NULL;
  struct topo_opts o;
  snprintf(path, sizeof path, "%s/tests/topo/%s", MONEL_SOURCE_DIR, name);
  CHECK_RES(topo_xml_load(path, &x), ncclSuccess);
  if (opts == NULL) topo_opts_default(&o);
  CHECK_RES(topo_system_make(x, opts ? opts : &o, &s), ncclSuccess);
  return s;
}

static int net_named(const struct topo_system* s, const char* name) {
  for (int n = 0; n < s->nnets; n++)
    if (strcmp(s->nets[n].name, name) == 0) return n;
  return -1;
}

static const struct topo_path* path(const struct topo_system* s, int g, const char* net) {
  int n = net_named(s, net);
  CHECK(n >= 0);
  return &s->gpu_net[g * s->nnets + n];
}

TEST(dgx_each_gpu_its_own_nic) {
  struct topo_system* s = load("dgx-8gpu-8nic.xml", NULL);
  CHECK_EQ(s->ngpus, 8);
  CHECK_EQ(s->nnets, 8);
  for (int g = 0; g < 8; g++) {
    int nets[8];
    CHECK_EQ(topo_gpu_nets(s, g, nets, 8), 1);
    char want[16];
    snprintf(want, sizeof want, "mlx5_%d", g);
    CHECK(strcmp(s->nets[nets[0]].name, want) == 0);
    CHECK_EQ(topo_channel_dev(s, g, 5), s->nets[nets[0]].dev);
    CHECK_EQ(path(s, g, want)->type, TOPO_PIX);
  }
  /* GPU 0: mlx5_1 shares only the switch; mlx5_2 (same CPU) and mlx5_4 (other CPU) are closer
   * through their own GPU over NVLink. */
  CHECK_EQ(path(s, 0, "mlx5_1")->type, TOPO_PXB);
  CHECK_EQ(path(s, 0, "mlx5_2")->type, TOPO_PXN);
  CHECK_EQ(path(s, 0, "mlx5_2")->via, 2);
  CHECK_EQ(path(s, 0, "mlx5_4")->type, TOPO_PXN);
  CHECK_EQ((int)path(s, 0, "mlx5_0")->bw, 48);
  CHECK_EQ(s->gpu_gpu[0 * 8 + 5].type, TOPO_NVL);
  CHECK_EQ((int)topo_gpu_nvlink_gbps(s, 3), 450); /* 18 NVLink 4 links */
  CHECK(topo_p2p_ok(s, 0, 5));
  topo_system_free(s);
}

TEST(dgx_without_pxn_and_gdr_levels) {
  struct topo_opts o;
  topo_opts_default(&o);
  o.pxn = 0;
  struct topo_system* s = load("dgx-8gpu-8nic.xml", &o);
  CHECK_EQ(path(s, 0, "mlx5_2")->type, TOPO_PHB);
  CHECK_EQ(path(s, 0, "mlx5_4")->type, TOPO_SYS);
  CHECK_EQ((int)path(s, 0, "mlx5_4")->bw, 22); /* Sapphire Rapids' CPU link */
  topo_system_free(s);
  /* GPUDirect only within PIX: the PXB NIC is reached through the CPU. */
  topo_opts_default(&o);
  o.gdr_level = TOPO_PIX;
  o.pxn = 0;
  s = load("dgx-8gpu-8nic.xml", &o);
  CHECK_EQ(path(s, 0, "mlx5_0")->type, TOPO_PIX);
  CHECK_EQ(path(s, 0, "mlx5_0")->gdr, 1);
  CHECK_EQ(path(s, 0, "mlx5_1")->type, TOPO_PHB);
  CHECK_EQ(path(s, 0, "mlx5_1")->gdr, 0);
  topo_system_free(s);
}

TEST(four_gpus_two_nics_share) {
  struct topo_system* s = load("4gpu-2nic.xml", NULL);
  const char* want[4] = {"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1"};
  for (int g = 0; g < 4; g++) {
    int nets[2];
    CHECK_EQ(topo_gpu_nets(s, g, nets, 2), 1);
    CHECK(strcmp(s->nets[nets[0]].name, want[g]) == 0);
    CHECK_EQ(path(s, g, want[g])->type, TOPO_PIX);
  }
  CHECK_EQ(path(s, 0, "mlx5_1")->type, TOPO_PHB);
  CHECK_EQ(s->gpu_gpu[0 * 4 + 1].type, TOPO_PIX);
  CHECK_EQ(s->gpu_gpu[0 * 4 + 2].type, TOPO_PHB);
  CHECK_EQ((int)topo_gpu_nvlink_gbps(s, 0), 0);
  CHECK(!topo_p2p_ok(s, 0, 2)); /* PHB is beyond the default P2P level (PXB) */
  topo_system_free(s);
  struct topo_opts o;
  topo_opts_default(&o);
  o.p2p_level = TOPO_SYS;
  s = load("4gpu-2nic.xml", &o);
  CHECK(topo_p2p_ok(s, 0, 2));
  topo_system_free(s);
}

TEST(nics_on_the_other_numa_node_rotate) {
  struct topo_system* s = load("nic-far-numa.xml", NULL);
  int nets[2];
  CHECK_EQ(path(s, 0, "mlx5_0")->type, TOPO_SYS);
  /* Both NICs are equally far from both GPUs: one each (dev 0 -> the first, dev 1 -> the
   * second, by the bit-reversed start), and with ALL both, in rotation. */
  CHECK_EQ(topo_gpu_nets(s, 0, nets, 2), 1);
  CHECK(strcmp(s->nets[nets[0]].name, "mlx5_0") == 0);
  CHECK_EQ(topo_gpu_nets(s, 1, nets, 2), 1);
  CHECK(strcmp(s->nets[nets[0]].name, "mlx5_1") == 0);
  topo_system_free(s);
  struct topo_opts o;
  topo_opts_default(&o);
  o.nics_per_gpu = -1;
  s = load("nic-far-numa.xml", &o);
  CHECK_EQ(topo_gpu_nets(s, 1, nets, 2), 2);
  CHECK_EQ(topo_channel_dev(s, 1, 0), 1);
  CHECK_EQ(topo_channel_dev(s, 1, 1), 0);
  topo_system_free(s);
}

TEST(no_nic) {
  struct topo_system* s = load("no-nic.xml", NULL);
  int nets[1];
  CHECK_EQ(s->ngpus, 1);
  CHECK_EQ(topo_gpu_nets(s, 0, nets, 1), 0);
  CHECK_EQ(topo_channel_dev(s, 0, 0), -1);
  topo_system_free(s);
}

static char* render(const struct topo_xml* x) {
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  CHECK(f != NULL);
  CHECK_RES(topo_xml_write(x, f), ncclSuccess);
  fclose(f);
  return buf;
}

TEST(dump_round_trip) {
  char path[1024];
  struct topo_xml *x = NULL, *y = NULL;
  snprintf(path, sizeof path, "%s/tests/topo/dgx-8gpu-8nic.xml", MONEL_SOURCE_DIR);
  CHECK_RES(topo_xml_load(path, &x), ncclSuccess);
  char* a = render(x);
  CHECK_RES(topo_xml_parse(a, strlen(a), &y, NULL, 0), ncclSuccess);
  char* b = render(y);
  CHECK(strcmp(a, b) == 0);
  CHECK(strncmp(a, "<system version=\"1\">\n  <cpu ", 28) == 0);
  CHECK(strstr(a, "<net name=\"mlx5_3\" dev=\"3\"") != NULL);
  CHECK(strstr(a, "<nvlink target=") != NULL);
  free(a);
  free(b);
  topo_xml_free(x);
  topo_xml_free(y);
}

static void refused(const char* text, const char* because) {
  char why[256];
  struct topo_xml* x = NULL;
  CHECK_RES(topo_xml_parse(text, strlen(text), &x, why, sizeof why), ncclInvalidArgument);
  CHECK(x == NULL);
  if (strstr(why, because) == NULL) {
    fprintf(stderr, "for %s: '%s' lacks '%s'\n", text, why, because);
    CHECK(0);
  }
}

TEST(malformed_files_refused_with_a_sentence) {
  refused("<system version=\"1\"><cpu numaid=\"0\"></system>", "close tag </system> where </cpu>");
  refused("<system version=\"1\">", "element <system> is not closed");
  refused("<system version=1></system>", "needs a value in quotes");
  refused("<system version=\"1\" version=\"1\"></system>", "appears twice");
  refused("<system version=\"1\">text</system>", "text is not allowed");
  refused("<system version=\"1\"/><system version=\"1\"/>", "a second top-level element");
  refused("", "holds no element");
  refused("<system version=\"1\"><!-- open", "not closed");
  refused("<system version=\"1\"><cpu a=\"x\"b=\"y\"/></system>", "separated by a space");
  refused("<system version=\"1\"></system >", "must end right after its name");
  refused("<system version=\"1\">\n\n<cpu numaid=\"0\">\n</pci></system>", "line 4");
  /* What NCCL refuses but is plainly well-formed is read: a declaration, tabs. */
  struct topo_xml* x = NULL;
  const char* ok = "<?xml version=\"1.0\"?>\n<system\tversion=\"1\">\t<cpu numaid='0'/></system>";
  CHECK_RES(topo_xml_parse(ok, strlen(ok), &x, NULL, 0), ncclSuccess);
  CHECK(strcmp(topo_xml_get(x->kids[0], "numaid"), "0") == 0);
  topo_xml_free(x);
  /* A tree that parses but is not a topology is refused by the system. */
  struct topo_opts o;
  struct topo_system* s = NULL;
  topo_opts_default(&o);
  const char* bad[] = {"<system version=\"2\"/>", "<topology version=\"1\"/>",
                       "<system version=\"1\"><cpu><pci busid=\"zz\"><gpu dev=\"0\" "
                       "sm=\"90\"/></pci></cpu></system>",
                       "<system version=\"1\"><cpu><pci busid=\"0000:01:00.0\"><gpu "
                       "sm=\"90\"/></pci></cpu></system>",
                       "<system version=\"1\"><cpu><pci busid=\"0000:01:00.0\"><gpu dev=\"x\" "
                       "sm=\"90\"/></pci></cpu></system>"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_RES(topo_xml_parse(bad[i], strlen(bad[i]), &x, NULL, 0), ncclSuccess);
    CHECK_RES(topo_system_make(x, &o, &s), ncclInvalidArgument);
    CHECK(s == NULL);
  }
}

TEST(path_levels_parse) {
  CHECK_EQ(topo_path_parse("PIX"), TOPO_PIX);
  CHECK_EQ(topo_path_parse("sys"), TOPO_SYS);
  CHECK_EQ(topo_path_parse("PXN"), TOPO_PXN);
  CHECK_EQ(topo_path_parse("0"), TOPO_LOC);
  CHECK_EQ(topo_path_parse("2"), TOPO_PXB);
  CHECK_EQ(topo_path_parse("3"), TOPO_PHB);
  CHECK_EQ(topo_path_parse("7"), TOPO_SYS);
  CHECK_EQ(topo_path_parse("NODE"), -1);
  CHECK_EQ(topo_path_parse(""), -1);
  char b[16];
  CHECK(topo_busid_norm("00000000:1B:00.0", b) && strcmp(b, "0000:1b:00.0") == 0);
  CHECK(!topo_busid_norm("0000:1b:00", b));
  CHECK(!topo_busid_norm("0000:1b:00.0x", b));
}

/* A fake sysfs tree: directories with the files detection reads. */
static void put(const char* root, const char* dir, const char* file, const char* value) {
  char p[2048];
  snprintf(p, sizeof p, "%s/%s", root, dir);
  char cmd[2200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
  CHECK(system(cmd) == 0);
  if (file == NULL) return;
  snprintf(p, sizeof p, "%s/%s/%s", root, dir, file);
  FILE* f = fopen(p, "w");
  CHECK(f != NULL);
  fprintf(f, "%s\n", value);
  fclose(f);
}

static void pci_dev(const char* root, const char* dir, const char* cls, const char* numa) {
  put(root, dir, "class", cls);
  put(root, dir, "max_link_speed", "32.0 GT/s PCIe");
  put(root, dir, "max_link_width", "16");
  put(root, dir, "numa_node", numa);
  char link[2048], target[2048];
  put(root, "bus/pci/devices", NULL, NULL);
  snprintf(link, sizeof link, "%s/bus/pci/devices/%s", root, strrchr(dir, '/') + 1);
  snprintf(target, sizeof target, "%s/%s", root, dir);
  CHECK(symlink(target, link) == 0);
}

static void remove_tree(const char* root) {
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  CHECK(system(cmd) == 0);
}

#define SW "devices/pci0000:10/0000:10:01.0/0000:11:00.0"

static void fake_tree(char* root) {
  CHECK(mkdtemp(root) != NULL);
  pci_dev(root, "devices/pci0000:10/0000:10:01.0", "0x060400", "0");
  pci_dev(root, SW, "0x060400", "0");
  pci_dev(root, SW "/0000:12:00.0", "0x060400", "0");
  pci_dev(root, SW "/0000:12:01.0", "0x060400", "0");
  pci_dev(root, SW "/0000:12:00.0/0000:13:00.0", "0x030200", "0");
  pci_dev(root, SW "/0000:12:01.0/0000:14:00.0", "0x020000", "0");
  pci_dev(root, "devices/pci0000:80/0000:80:01.0", "0x060400", "1");
  pci_dev(root, "devices/pci0000:80/0000:80:01.0/0000:81:00.0", "0x020000", "1");
  put(root, "devices/system/node/node0", "cpumap", "0000ffff");
  put(root, "devices/system/node/node1", "cpumap", "ffff0000");
}

static struct topo_system* detect(const char* root, const char* file, struct topo_xml** dump) {
  struct topo_gpu_desc g = {.busid = "0000:13:00.0", .dev = 0, .sm = 90, .gdr = 1, .rank = 0};
  struct topo_nic_desc n[2];
  memset(n, 0, sizeof n);
  snprintf(n[0].name, sizeof n[0].name, "eth0");
  snprintf(n[0].pci_path, sizeof n[0].pci_path, "%s/" SW "/0000:12:01.0/0000:14:00.0", root);
  snprintf(n[1].name, sizeof n[1].name, "eth1");
  snprintf(n[1].pci_path, sizeof n[1].pci_path, "%s/devices/pci0000:80/0000:80:01.0/0000:81:00.0",
           root);
  for (int i = 0; i < 2; i++) n[i].dev = i, n[i].speed_mbps = 100000, n[i].gdr = 1, n[i].rail = -1;
  struct topo_detect d = {
      .gpus = &g, .ngpus = 1, .nics = n, .nnics = 2, .file = file, .sysfs = root, .trim = 1};
  struct topo_xml* x = NULL;
  struct topo_system* s = NULL;
  struct topo_opts o;
  topo_opts_default(&o);
  CHECK_RES(topo_detect_xml(&d, &x), ncclSuccess);
  if (dump) {
    char* text = render(x);
    CHECK_RES(topo_xml_parse(text, strlen(text), dump, NULL, 0), ncclSuccess);
    free(text);
  }
  CHECK_RES(topo_system_make(x, &o, &s), ncclSuccess);
  return s;
}

TEST(fake_sysfs) {
  char root[] = "/tmp/monel-sysfs-XXXXXX";
  fake_tree(root);
  struct topo_xml* dump = NULL;
  struct topo_system* s = detect(root, NULL, &dump);
  CHECK_EQ(s->ngpus, 1);
  CHECK_EQ(s->nnets, 2);
  CHECK(strcmp(s->gpus[0].busid, "0000:13:00.0") == 0);
  CHECK_EQ(path(s, 0, "eth0")->type, TOPO_PIX);
  CHECK_EQ(path(s, 0, "eth1")->type, TOPO_SYS);
  CHECK(strcmp(s->nets[0].busid, "0000:14:00.0") == 0);
  CHECK_EQ(topo_channel_dev(s, 0, 0), 0);
  /* The switch above the GPU's and the NIC's downstream ports is their parent; the root port is
   * skipped; each chain hangs from the CPU of its NUMA node. */
  struct topo_xml* sw = topo_xml_find(dump, "pci", "busid", "0000:11:00.0");
  CHECK(sw != NULL);
  CHECK(strcmp(sw->parent->name, "cpu") == 0);
  CHECK(strcmp(topo_xml_get(sw->parent, "numaid"), "0") == 0);
  CHECK(strcmp(topo_xml_get(sw->parent, "affinity"), "0000ffff") == 0);
  CHECK_EQ(sw->nkids, 2);
  CHECK(strcmp(topo_xml_get(sw->kids[0], "busid"), "0000:13:00.0") == 0);
  CHECK(strcmp(topo_xml_get(sw, "link_speed"), "32.0 GT/s PCIe") == 0);
  CHECK(topo_xml_find(dump, "pci", "busid", "0000:12:00.0") == NULL);
  struct topo_xml* far = topo_xml_find(dump, "pci", "busid", "0000:81:00.0");
  CHECK(far != NULL && strcmp(topo_xml_get(far->parent, "numaid"), "1") == 0);
  topo_xml_free(dump);
  topo_system_free(s);
  remove_tree(root);
}

TEST(file_wins_and_is_trimmed) {
  char root[] = "/tmp/monel-sysfs-XXXXXX";
  fake_tree(root);
  /* The file puts the GPU beside the far NIC's CPU and lists a GPU this host does not have. */
  char file[1100];
  snprintf(file, sizeof file, "%s/topo.xml", root);
  FILE* f = fopen(file, "w");
  CHECK(f != NULL);
  fprintf(f,
          "<system version=\"1\">\n"
          "  <cpu numaid=\"1\" arch=\"x86_64\" vendor=\"GenuineIntel\" modelid=\"143\">\n"
          "    <pci busid=\"0000:70:00.0\" class=\"0x060400\">\n"
          "      <pci busid=\"0000:13:00.0\" class=\"0x030200\"/>\n"
          "      <pci busid=\"0000:81:00.0\" class=\"0x020000\"/>\n"
          "      <pci busid=\"0000:99:00.0\" class=\"0x030200\"><gpu dev=\"1\" sm=\"90\"/></pci>\n"
          "    </pci>\n"
          "  </cpu>\n"
          "</system>\n");
  fclose(f);
  struct topo_xml* dump = NULL;
  struct topo_system* s = detect(root, file, &dump);
  CHECK_EQ(s->ngpus, 1); /* 0000:99:00.0 trimmed */
  CHECK_EQ(path(s, 0, "eth1")->type, TOPO_PIX);
  CHECK_EQ(topo_channel_dev(s, 0, 0), 1);
  CHECK(topo_xml_find(dump, "pci", "busid", "0000:99:00.0") == NULL);
  topo_xml_free(dump);
  topo_system_free(s);
  remove_tree(root);
}
