#include "transforms/python_stage_host.hpp"

namespace stoker {

// The interpreter's side, run with `python3 -c`: imports the callable,
// says so (or why not), then answers one call at a time until the worker
// closes its socket. Fixed fds: 3 the socket, 4 the shared memory.
// A request is 10 little-endian u64 (kind, seed, h, w, c, dtype, the
// memory's size, where the output goes, images n, classes); a reply 5
// (status, h, w, c, length of the text that follows). Status 0 ok, 1 the
// function raised (or the import failed), 2 it returned the wrong thing.
// Kind 3: n HWC samples (the head's images n), each described by a
// record of 8 u64 from byte 64 of the memory (seed, h, w, c, dtype, where its
// pixels are, where the result goes (it may be the same place), 0; h 0:
// not sent); the function gets
// each CHW and returns it so; the head's last word 1 (python-pil) hands
// it a PIL image instead (8-bit, 1, 3 or 4 channels) and takes one back
// of the same mode and size. The memory's first u64 counts the samples
// done (the worker's deadline is per sample). The reply's h: how many
// failed; its text then lists them as JSON, [[index, status, text], ...].
// Kind 2: a batch, n float32 CHW images then n int64 labels (each part at
// a 64-byte boundary); the function gets (images, labels) and returns
// them, the labels as they were (int64, n) or soft (float32, n x
// classes); the reply's h says which: 0 or classes.
const char* python_stage_host_script() noexcept {
  return R"PY(
import importlib, json, os, random, socket, struct, sys, threading, time
import traceback
sock = socket.socket(fileno=int(sys.argv[1]))
mem_fd, ref = int(sys.argv[2]), sys.argv[3]
sys.path[:0] = sys.argv[4:]
HEAD, REPLY = struct.Struct('<10Q'), struct.Struct('<5Q')

def reply(status, h=0, w=0, c=0, text=''):
    data = text.encode('utf-8', 'replace')
    sock.sendall(REPLY.pack(status, h, w, c, len(data)) + data)

head_buf = bytearray(HEAD.size)
def receive_head():
    view, got = memoryview(head_buf), 0
    while got < HEAD.size:
        n = sock.recv_into(view[got:])
        if not n:
            sys.exit(0)  # the worker went away
        got += n
    return HEAD.unpack(head_buf)

def orphaned(parent=os.getppid()):  # end with the node, even mid-call
    while os.getppid() == parent:  # (PR_SET_PDEATHSIG follows the thread
        time.sleep(0.5)            # that started it, not the node)
    os._exit(0)

threading.Thread(target=orphaned, daemon=True).start()
try:
    module_name, _, attr = ref.partition(':')
    fn = importlib.import_module(module_name)
    for part in attr.split('.'):
        fn = getattr(fn, part)
    if not callable(fn):
        raise TypeError(f'{ref} is a {type(fn).__name__}, not a callable')
    import mmap
    import torch
    torch.set_num_threads(1)
except BaseException as e:
    reply(1, text=f'{type(e).__name__}: {e}')
    sys.exit(0)
reply(0)
mm, size = None, 0
DTYPES = {0: torch.uint8, 1: torch.float32}
MODES = {1: 'L', 3: 'RGB', 4: 'RGBA'}
views = {}  # (dtype, h, w, c, in_at, out_at): the input CHW, the output
# torch.manual_seed's own generator, without its CUDA and MPS bookkeeping
# (30-50 us a call here): the same CPU draws.
seed_torch = torch.default_generator.manual_seed
def aligned(n):
    return (n + 63) // 64 * 64

def seed_all(seed):
    seed_torch(seed)
    random.seed(seed)
    if 'numpy' in sys.modules:
        sys.modules['numpy'].random.seed(seed % (1 << 32))

def raised(e):
    at = traceback.extract_tb(e.__traceback__)[-1]
    place = f'{os.path.basename(at.filename)}:{at.lineno} in {at.name}'
    return (1, f'{type(e).__name__}: {e} ({place})\n'
               f'{traceback.format_exc()}')

def described(y):
    return (f'a {y.dtype} tensor of shape {tuple(y.shape)}'
            if isinstance(y, torch.Tensor) else f'a {type(y).__name__}')

def batch_call(seed, n, c, h, w, out_at, classes):
    count = n * c * h * w
    x = torch.frombuffer(mm, dtype=torch.float32, count=count)
    x = x.view(n, c, h, w)
    labels = torch.frombuffer(mm, dtype=torch.int64, count=n,
                              offset=aligned(4 * count))
    seed_all(seed)
    try:
        made = fn(x, labels)
    except Exception as e:
        del x, labels
        status, text = raised(e)
        reply(status, text=text)
        return
    del x, labels
    if not (isinstance(made, (tuple, list)) and len(made) == 2):
        reply(2, text=f'returned {type(made).__name__}; expected a pair '
                      f'(images, labels)')
        return
    images, out_labels = made
    del made
    if (not isinstance(images, torch.Tensor)
            or images.dtype != torch.float32
            or tuple(images.shape) != (n, c, h, w)):
        reply(2, text=f'returned images as {described(images)}; expected '
                      f'a torch.float32 tensor of shape (N, C, H, W) = '
                      f'({n}, {c}, {h}, {w})')
        return
    hard = (isinstance(out_labels, torch.Tensor)
            and out_labels.dtype == torch.int64
            and tuple(out_labels.shape) == (n,))
    soft = (isinstance(out_labels, torch.Tensor)
            and out_labels.dtype == torch.float32
            and tuple(out_labels.shape) == (n, classes))
    if not (hard or soft):
        reply(2, text=f'returned labels as {described(out_labels)}; '
                      f'expected torch.int64 of shape ({n},) or soft '
                      f'labels, torch.float32 of shape (N, classes) = '
                      f'({n}, {classes})')
        return
    torch.frombuffer(mm, dtype=torch.float32, count=count,
                     offset=out_at).view(n, c, h, w).copy_(images)
    at = out_at + aligned(4 * count)
    if hard:
        torch.frombuffer(mm, dtype=torch.int64, count=n,
                         offset=at).copy_(out_labels)
    else:
        torch.frombuffer(mm, dtype=torch.float32, count=n * classes,
                         offset=at).view(n, classes).copy_(out_labels)
    del images, out_labels
    reply(0, 0 if hard else classes)

def pil_call(seed, h, w, c, in_at, out_at):
    import numpy
    from PIL import Image
    mode, n = MODES[c], h * w * c
    shape = (h, w) if c == 1 else (h, w, c)
    pixels = numpy.frombuffer(mm, dtype=numpy.uint8, count=n,
                              offset=in_at).reshape(shape)
    image = Image.fromarray(pixels, mode)  # PIL keeps pixels its own way
    del pixels
    seed_all(seed)
    try:
        y = fn(image)
    except Exception as e:
        return raised(e)
    if (not isinstance(y, Image.Image) or y.mode != mode
            or y.size != (w, h)):
        got = (f'a PIL image of mode {y.mode} and size {y.size}'
               if isinstance(y, Image.Image) else described(y))
        return (2, f'returned {got}; expected a PIL image of mode {mode} '
                   f'and size (W, H) = ({w}, {h})')
    mm[out_at:out_at + n] = y.tobytes()
    return None

def tensor_call(seed, h, w, c, dt, in_at, out_at):
    dtype, n = DTYPES[dt], h * w * c
    key = (dt, h, w, c, in_at, out_at)
    if key not in views:  # the same shapes batch after batch: made once
        if len(views) > 4096:
            views.clear()
        x = torch.frombuffer(mm, dtype=dtype, count=n, offset=in_at)
        out = torch.frombuffer(mm, dtype=dtype, count=n, offset=out_at)
        lo = x.data_ptr()
        views[key] = (x.view(h, w, c).permute(2, 0, 1), out.view(h, w, c),
                      lo, lo + n * x.element_size())
    x, out, lo, hi = views[key]
    seed_all(seed)
    try:
        y = fn(x)
    except Exception as e:
        return raised(e)
    if (not isinstance(y, torch.Tensor) or y.dtype != dtype
            or tuple(y.shape) != (c, h, w)):
        return (2, f'returned {described(y)}; expected a {dtype} tensor '
                   f'of shape (C, H, W) = ({c}, {h}, {w})')
    if y is x and in_at == out_at:
        return None  # changed in place, or not at all: it is there
    if lo <= y.data_ptr() < hi:
        y = y.clone()  # a view of the input: read before it is overwritten
    out.copy_(y.permute(1, 2, 0))
    return None

RECORD, DONE = struct.Struct('<8Q'), struct.Struct('<Q')
def many_call(n, pil):
    failed = []
    for i in range(n):
        seed, h, w, c, dt, in_at, out_at, _ = RECORD.unpack_from(
            mm, 64 + i * RECORD.size)
        if h != 0:
            if pil:
                bad = pil_call(seed, h, w, c, in_at, out_at)
            else:
                bad = tensor_call(seed, h, w, c, dt, in_at, out_at)
            if bad is not None:
                failed.append([i, bad[0], bad[1]])
        DONE.pack_into(mm, 0, i + 1)
    reply(0, len(failed), text=json.dumps(failed) if failed else '')

while True:
    (kind, seed, h, w, c, dt, mapped, out_at, count,
     last) = receive_head()
    if mapped != size:
        views.clear()  # they hold the old map's buffer
        if mm is not None:
            try:
                mm.close()
            except BufferError:  # a view the function kept: freed with it
                pass
        mm, size = mmap.mmap(mem_fd, mapped), mapped
    if kind == 2:
        batch_call(seed, count, c, h, w, out_at, last)
    else:
        many_call(count, last == 1)
)PY";
}

} // namespace stoker
