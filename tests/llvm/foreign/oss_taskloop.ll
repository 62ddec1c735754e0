; An OmpSs-2 taskloop as clang -fompss-2 writes it at -O0 (bounds through compute
; functions of the captured variables), written for hpvm's tests:
;
;   void taskloop(int *sum, int lb, int ub, int step) {
;     int i;
;     #pragma oss taskloop
;     for (i = lb; i < ub; i += step)
;       *sum += i;
;   }

define void @taskloop(ptr %sum, i32 %lb, i32 %ub, i32 %step) {
entry:
  %sum.addr = alloca ptr, align 8
  %lb.addr = alloca i32, align 4
  %ub.addr = alloca i32, align 4
  %step.addr = alloca i32, align 4
  %i = alloca i32, align 4
  store ptr %sum, ptr %sum.addr, align 8
  store i32 %lb, ptr %lb.addr, align 4
  store i32 %ub, ptr %ub.addr, align 4
  store i32 %step, ptr %step.addr, align 4
  %0 = call token @llvm.directive.region.entry() [ "DIR.OSS"([9 x i8] c"TASKLOOP\00"), "QUAL.OSS.FIRSTPRIVATE"(ptr %sum.addr, ptr undef), "QUAL.OSS.PRIVATE"(ptr %i, i32 undef), "QUAL.OSS.FIRSTPRIVATE"(ptr %lb.addr, i32 undef), "QUAL.OSS.FIRSTPRIVATE"(ptr %ub.addr, i32 undef), "QUAL.OSS.FIRSTPRIVATE"(ptr %step.addr, i32 undef), "QUAL.OSS.LOOP.IND.VAR"(ptr %i), "QUAL.OSS.LOOP.LOWER.BOUND"(ptr @compute_lb, ptr %lb.addr), "QUAL.OSS.LOOP.UPPER.BOUND"(ptr @compute_ub, ptr %ub.addr), "QUAL.OSS.LOOP.STEP"(ptr @compute_step, ptr %step.addr), "QUAL.OSS.LOOP.TYPE"(i64 0, i64 1, i64 1, i64 1, i64 1) ]
  %1 = load i32, ptr %i, align 4
  %2 = load ptr, ptr %sum.addr, align 8
  %3 = load i32, ptr %2, align 4
  %add = add nsw i32 %3, %1
  store i32 %add, ptr %2, align 4
  call void @llvm.directive.region.exit(token %0)
  ret void
}

declare token @llvm.directive.region.entry()
declare void @llvm.directive.region.exit(token)

define internal i32 @compute_lb(ptr %lb) {
entry:
  %0 = load i32, ptr %lb, align 4
  ret i32 %0
}

define internal i32 @compute_ub(ptr %ub) {
entry:
  %0 = load i32, ptr %ub, align 4
  ret i32 %0
}

define internal i32 @compute_step(ptr %step) {
entry:
  %0 = load i32, ptr %step, align 4
  ret i32 %0
}
