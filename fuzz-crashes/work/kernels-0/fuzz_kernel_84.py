import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (((b ^ b) ^ (pto.select(b == 100, b, 100) - a)) ^ (-((b - b) ^ pto.select(b == b, b, b))))
        pto.store(o + i, t0)
