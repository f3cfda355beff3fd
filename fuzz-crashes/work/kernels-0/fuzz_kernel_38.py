import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select(pto.select(((b ^ b) ^ b) < (-(100 | b)), ((b ^ b) ^ b), (-(100 | b))) == a, pto.select(((b ^ b) ^ b) < (-(100 | b)), ((b ^ b) ^ b), (-(100 | b))), a)
        pto.store(o + i, t0)
