; hpvm's own test program, written as HPVM's GenHPVM writes HPVM IR (LLVM 9 text) for a
; CUDA-style kernel compiled without optimization: the leaf as clang -O0 emits it (every
; argument spilled to a slot and loaded back, the int counter k in a slot, `if (x < n)` on
; loaded values, no TBAA, `noinline optnone`), the root as GenHPVM's rewrite leaves it; typed
; pointers, bare in/out attributes, a packed empty %struct.out return, the node function
; passed to createNode1D through a bitcast constant expression, hints as named metadata, a
; main that launches the root.
;
; y[x] = sum_k A[k*n + x] * v[k] (A^T v, A stored row-major m x n) for each instance x of a
; 1-D leaf launched over a grid rounded up past n, as matvec_guarded.ll computes it; here
; k and m are int, the sum is float, and the loop's test `k < m` reads both from slots.
; ModuleID = 'matvec_O0.c'
source_filename = "matvec_O0.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.Root = type { float*, i64, float*, i64, float*, i64, i64, i32, i64, %struct.out.MatvecRoot }
%struct.out.matvecT = type <{}>
%struct.out.MatvecRoot = type <{}>

; Function Attrs: noinline nounwind optnone uwtable
define dso_local %struct.out.matvecT @matvecT_cloned(float* in %A, i64 %bytes_A, float* in %v, i64 %bytes_v, float* out %y, i64 %bytes_y, i64 %n, i32 %m) #0 {
entry:
  %A.addr = alloca float*, align 8
  %bytes_A.addr = alloca i64, align 8
  %v.addr = alloca float*, align 8
  %bytes_v.addr = alloca i64, align 8
  %y.addr = alloca float*, align 8
  %bytes_y.addr = alloca i64, align 8
  %n.addr = alloca i64, align 8
  %m.addr = alloca i32, align 4
  %node = alloca i8*, align 8
  %x = alloca i64, align 8
  %sum = alloca float, align 4
  %k = alloca i32, align 4
  store float* %A, float** %A.addr, align 8
  store i64 %bytes_A, i64* %bytes_A.addr, align 8
  store float* %v, float** %v.addr, align 8
  store i64 %bytes_v, i64* %bytes_v.addr, align 8
  store float* %y, float** %y.addr, align 8
  store i64 %bytes_y, i64* %bytes_y.addr, align 8
  store i64 %n, i64* %n.addr, align 8
  store i32 %m, i32* %m.addr, align 4
  %call = call i8* @llvm.hpvm.getNode()
  store i8* %call, i8** %node, align 8
  %0 = load i8*, i8** %node, align 8
  %call1 = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %0)
  store i64 %call1, i64* %x, align 8
  %1 = load i64, i64* %x, align 8
  %2 = load i64, i64* %n.addr, align 8
  %cmp = icmp slt i64 %1, %2
  br i1 %cmp, label %if.then, label %if.end

if.then:                                          ; preds = %entry
  store float 0.000000e+00, float* %sum, align 4
  store i32 0, i32* %k, align 4
  br label %for.cond

for.cond:                                         ; preds = %for.inc, %if.then
  %3 = load i32, i32* %k, align 4
  %4 = load i32, i32* %m.addr, align 4
  %cmp2 = icmp slt i32 %3, %4
  br i1 %cmp2, label %for.body, label %for.end

for.body:                                         ; preds = %for.cond
  %5 = load float*, float** %A.addr, align 8
  %6 = load i32, i32* %k, align 4
  %conv = sext i32 %6 to i64
  %7 = load i64, i64* %n.addr, align 8
  %mul = mul nsw i64 %conv, %7
  %8 = load i64, i64* %x, align 8
  %add = add nsw i64 %mul, %8
  %arrayidx = getelementptr inbounds float, float* %5, i64 %add
  %9 = load float, float* %arrayidx, align 4
  %10 = load float*, float** %v.addr, align 8
  %11 = load i32, i32* %k, align 4
  %idxprom = sext i32 %11 to i64
  %arrayidx3 = getelementptr inbounds float, float* %10, i64 %idxprom
  %12 = load float, float* %arrayidx3, align 4
  %mul4 = fmul float %9, %12
  %13 = load float, float* %sum, align 4
  %add5 = fadd float %13, %mul4
  store float %add5, float* %sum, align 4
  br label %for.inc

for.inc:                                          ; preds = %for.body
  %14 = load i32, i32* %k, align 4
  %inc = add nsw i32 %14, 1
  store i32 %inc, i32* %k, align 4
  br label %for.cond

for.end:                                          ; preds = %for.cond
  %15 = load float, float* %sum, align 4
  %16 = load float*, float** %y.addr, align 8
  %17 = load i64, i64* %x, align 8
  %arrayidx6 = getelementptr inbounds float, float* %16, i64 %17
  store float %15, float* %arrayidx6, align 4
  br label %if.end

if.end:                                           ; preds = %for.end, %entry
  ret %struct.out.matvecT undef
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.MatvecRoot @MatvecRoot_cloned(float* in %A, i64 %bytes_A, float* in %v, i64 %bytes_v, float* out %y, i64 %bytes_y, i64 %n, i32 %m, i64 %grid) #0 {
entry:
  %matvecT_cloned.node = call i8* @llvm.hpvm.createNode1D(i8* bitcast (%struct.out.matvecT (float*, i64, float*, i64, float*, i64, i64, i32)* @matvecT_cloned to i8*), i64 %grid)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 5, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 6, i32 6, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 7, i32 7, i1 false)
  ret %struct.out.MatvecRoot undef
}

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #1 {
entry:
  %RootArgs = alloca %struct.Root, align 8
  %0 = bitcast %struct.Root* %RootArgs to i8*
  call void @llvm.hpvm.init()
  %graphID = call i8* @llvm.hpvm.launch(i8* bitcast (%struct.out.MatvecRoot (float*, i64, float*, i64, float*, i64, i64, i32, i64)* @MatvecRoot_cloned to i8*), i8* nonnull %0, i1 false)
  call void @llvm.hpvm.wait(i8* %graphID)
  call void @llvm.hpvm.cleanup()
  ret i32 0
}

; Function Attrs: nounwind
declare i8* @llvm.hpvm.getNode() #2

; Function Attrs: nounwind
declare i64 @llvm.hpvm.getNodeInstanceID.x(i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode1D(i8*, i64) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.init() #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.wait(i8*) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.cleanup() #2

attributes #0 = { noinline nounwind optnone uwtable "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "min-legal-vector-width"="0" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-jump-tables"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #1 = { nounwind uwtable "no-frame-pointer-elim"="false" "target-cpu"="x86-64" }
attributes #2 = { nounwind }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}
!hpvm_hint_cpu = !{!2, !3}
!hpvm_hint_gpu = !{}
!hpvm_hint_cpu_gpu = !{}
!hpvm_hint_cudnn = !{}
!hpvm_hint_promise = !{}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 9.0.0"}
!2 = !{%struct.out.matvecT (float*, i64, float*, i64, float*, i64, i64, i32)* @matvecT_cloned}
!3 = !{%struct.out.MatvecRoot (float*, i64, float*, i64, float*, i64, i64, i32, i64)* @MatvecRoot_cloned}
!4 = !{!"Simple C/C++ TBAA"}
!5 = !{!6, !6, i64 0}
!6 = !{!"float", !7, i64 0}
!7 = !{!"omnipotent char", !4, i64 0}
