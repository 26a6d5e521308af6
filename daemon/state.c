/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state file (see state.h): a header, then records, dense. It grows by
 * doubling (ftruncate + mremap) and shrinks when a quarter full, so it is
 * about 80 bytes per process we set, in the page cache of a tmpfs.
 *
 * A record is written field by field and marked valid last; a crash in
 * the middle of a write or of a move (remove) leaves at worst a record
 * that is not valid or a duplicate, and the next run only adopts what it
 * can verify against the running process.
 */

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "state.h"
#include "util.h"

#define STATE_MAGIC "LATNICE\1"
#define STATE_VERSION 1
#define MIN_CAPACITY 64U

typedef struct StateHeader {
        char magic[8];
        uint32_t version;
        uint32_t record_size;
        StateKey key;
        uint32_t n_records;
        uint32_t reserved;
} StateHeader;

struct StateFile {
        int fd;
        char *path;
        StateHeader *header;
        StateRecord *records;
        size_t capacity;
        size_t map_size;
};

_Static_assert(sizeof(StateRecord) == 80, "state record layout");

static size_t map_size_for(size_t capacity) {
        return sizeof(StateHeader) + capacity * sizeof(StateRecord);
}

static int state_map(StateFile *f, size_t capacity) {
        size_t size = map_size_for(capacity);
        void *p;

        if (ftruncate(f->fd, (off_t) size) < 0)
                return -errno;
        if (f->header)
                p = mremap(f->header, f->map_size, size, MREMAP_MAYMOVE);
        else
                p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
        if (p == MAP_FAILED)
                return -errno;
        f->header = p;
        f->records = (StateRecord *) ((char *) p + sizeof(StateHeader));
        f->capacity = capacity;
        f->map_size = size;
        return 0;
}

static bool header_matches(const StateHeader *h, const StateKey *key) {
        return memcmp(h->magic, STATE_MAGIC, sizeof(h->magic)) == 0 && h->version == STATE_VERSION &&
               h->record_size == sizeof(StateRecord) && memcmp(&h->key, key, sizeof(*key)) == 0;
}

int state_file_open(const char *dir, const StateKey *key, StateAdopt adopt, void *userdata, StateFile **ret) {
        StateFile *f;
        struct stat st;
        size_t old_n = 0, kept = 0;
        int r;

        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        f = calloc(1, sizeof(StateFile));
        if (!f)
                return -ENOMEM;
        f->fd = -1;
        f->path = path_join(dir, "applied");
        if (!f->path) {
                r = -ENOMEM;
                goto fail;
        }
        f->fd = open(f->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (f->fd < 0) {
                r = -errno;
                goto fail;
        }
        if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                r = -EBADF;
                goto fail;
        }

        if ((size_t) st.st_size >= sizeof(StateHeader)) {
                size_t n_fit = ((size_t) st.st_size - sizeof(StateHeader)) / sizeof(StateRecord);

                r = state_map(f, n_fit > MIN_CAPACITY ? n_fit : MIN_CAPACITY);
                if (r < 0)
                        goto fail;
                if (header_matches(f->header, key))
                        old_n = f->header->n_records < n_fit ? f->header->n_records : n_fit;
        } else {
                r = state_map(f, MIN_CAPACITY);
                if (r < 0)
                        goto fail;
        }

        /* Keep what the caller can verify, compacted to the front, in order. */
        for (size_t i = 0; i < old_n; i++) {
                StateRecord rec = f->records[i];
                bool dup = false;

                if (rec.valid != STATE_RECORD_VALID || rec.pid <= 0)
                        continue;
                for (size_t j = 0; j < kept && !dup; j++)
                        dup = f->records[j].pid == rec.pid;
                if (dup || !adopt(&rec, (uint32_t) kept, userdata))
                        continue;
                f->records[kept++] = rec;
        }
        memset(f->records + kept, 0, (f->capacity - kept) * sizeof(StateRecord));
        f->header->n_records = (uint32_t) kept;
        memcpy(f->header->magic, STATE_MAGIC, sizeof(f->header->magic));
        f->header->version = STATE_VERSION;
        f->header->record_size = sizeof(StateRecord);
        f->header->key = *key;
        *ret = f;
        return 0;
fail:
        if (f->header)
                munmap(f->header, f->map_size);
        if (f->fd >= 0)
                close(f->fd);
        free(f->path);
        free(f);
        return r;
}

StateFile *state_file_close(StateFile *f, bool keep) {
        if (!f)
                return NULL;
        if (!keep)
                (void) unlink(f->path);
        if (f->header)
                munmap(f->header, f->map_size);
        close(f->fd);
        free(f->path);
        free(f);
        return NULL;
}

size_t state_file_size(const StateFile *f) {
        return f ? f->header->n_records : 0;
}

static void record_write(StateRecord *dst, const StateRecord *src) {
        StateRecord rec = *src;

        /* Invalid while it is rewritten; valid last. */
        __atomic_store_n(&dst->valid, 0, __ATOMIC_RELEASE);
        rec.valid = 0;
        *dst = rec;
        __atomic_store_n(&dst->valid, STATE_RECORD_VALID, __ATOMIC_RELEASE);
}

uint32_t state_file_add(StateFile *f, const StateRecord *rec) {
        size_t n;

        if (!f)
                return STATE_SLOT_NONE;
        n = f->header->n_records;
        if (n >= f->capacity && (f->capacity * 2 >= UINT32_MAX || state_map(f, f->capacity * 2) < 0))
                return STATE_SLOT_NONE;
        record_write(&f->records[n], rec);
        f->header->n_records = (uint32_t) (n + 1);
        return (uint32_t) n;
}

void state_file_update(StateFile *f, uint32_t slot, const StateRecord *rec) {
        if (!f || slot >= f->header->n_records)
                return;
        record_write(&f->records[slot], rec);
}

pid_t state_file_remove(StateFile *f, uint32_t slot) {
        size_t last;
        pid_t moved = 0;

        if (!f || slot >= f->header->n_records)
                return 0;
        last = f->header->n_records - 1;
        if (slot != last) {
                record_write(&f->records[slot], &f->records[last]);
                moved = f->records[slot].pid;
        }
        /* A crash right here leaves the moved record twice: the next run keeps one. */
        memset(&f->records[last], 0, sizeof(StateRecord));
        f->header->n_records = (uint32_t) last;
        if (f->capacity > MIN_CAPACITY && last < f->capacity / 4)
                (void) state_map(f, f->capacity / 2);
        return moved;
}

void state_record_from_applied(const AppliedProcess *e, StateRecord *ret) {
        *ret = (StateRecord) {
                .valid = STATE_RECORD_VALID,
                .pid = e->pid,
                .start_time = e->start_time,
                .raw = e->raw,
                .before_raw = e->before_raw,
                .uid = e->uid,
                .manual_uid = e->manual_uid,
                .latency_nice = (int16_t) e->latency_nice,
                .before = (int16_t) e->before,
                .flags = (uint16_t) ((e->via_unit ? STATE_F_VIA_UNIT : 0) | (e->inherit ? STATE_F_INHERIT : 0) |
                                     (e->manual ? STATE_F_MANUAL : 0) | (e->foreground ? STATE_F_FOREGROUND : 0) |
                                     (e->tgid > 0 ? STATE_F_THREAD : 0)),
                .exe_ino = e->exe_ino,
                .exe_dev = e->exe_dev,
                .tgid = e->tgid > 0 ? (uint32_t) e->tgid : 0,
        };
        memcpy(ret->comm, e->comm, sizeof(ret->comm));
}

/* ---- dir/units ---------------------------------------------------------- */

static bool units_field_ok(const char *s) {
        return s && *s && !strpbrk(s, "\t\n");
}

int state_units_write(const char *dir, const StateKnob *knobs, size_t n_knobs, char * const *asked) {
        _cleanup_(freep) char *path = path_join(dir, "units"), *text = NULL;
        size_t size = 0;
        FILE *f;
        int r = 0;

        if (!path)
                return -ENOMEM;
        if (n_knobs == 0 && strv_length(asked) == 0)
                return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
        f = open_memstream(&text, &size);
        if (!f)
                return -errno;
        for (size_t i = 0; i < n_knobs; i++)
                if (units_field_ok(knobs[i].cgroup) && knobs[i].cgroup[0] == '/')
                        fprintf(f, "knob\t%d\t%d\t%s\n", knobs[i].before, knobs[i].value, knobs[i].cgroup);
        for (char * const *a = asked; a && *a; a++)
                if (units_field_ok(*a))
                        fprintf(f, "cpu-accounting\t%s\n", *a);
        if (fflush(f) != 0 || ferror(f))
                r = -(errno ?: ENOMEM);
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        if (r < 0)
                return r;
        return write_file_atomic(path, text, size, 0600);
}

int state_units_read(const char *dir, StateKnob **knobs, size_t *n_knobs, char ***asked, unsigned *ret_skipped) {
        _cleanup_(freep) char *path = path_join(dir, "units"), *line = NULL;
        _cleanup_(fclosep) FILE *f = NULL;
        unsigned skipped = 0;
        size_t sz = 0;

        if (!path)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        while (getline(&line, &sz, f) > 0) {
                int before, value, off = 0;

                line[strcspn(line, "\n")] = 0;
                if (sscanf(line, "knob\t%d\t%d\t%n", &before, &value, &off) == 2 && off > 0 && before >= -20 &&
                    before <= 19 && value >= -20 && value <= 19 && line[off] == '/' && units_field_ok(line + off)) {
                        StateKnob *nk = reallocarray(*knobs, *n_knobs + 1, sizeof(StateKnob));
                        char *cg;

                        if (!nk)
                                return -ENOMEM;
                        *knobs = nk;
                        cg = strdup(line + off);
                        if (!cg)
                                return -ENOMEM;
                        nk[(*n_knobs)++] = (StateKnob) { .cgroup = cg, .before = before, .value = value };
                } else if (strncmp(line, "cpu-accounting\t", 15) == 0 && units_field_ok(line + 15)) {
                        if (!strv_contains(*asked, line + 15) && strv_extend(asked, line + 15) < 0)
                                return -ENOMEM;
                } else if (*line)
                        skipped++;
        }
        if (ret_skipped)
                *ret_skipped = skipped;
        return 0;
}
