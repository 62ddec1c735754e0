; hpvm's own test program, written as HPVM's GenHPVM writes HPVM IR (LLVM 9 text): typed
; pointers, bare in/out attributes, packed %struct.out.* return types, node functions passed
; to createNode through bitcast constant expressions, hints as named metadata and a main
; that launches the root with llvm.hpvm.launch.
;
; Z[4i+j] = a * X[4i+j] + Y[4i+j] for each instance i of a 1-D leaf (j = 0..3, a loop); each
; instance returns its last element and the byte size of Z, packed; the root binds both.
; ModuleID = 'saxpy.c'
source_filename = "saxpy.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.Root = type { float*, i64, float*, i64, float*, i64, float, i64, %struct.out.PipeRoot }
%struct.out.saxpy = type <{ float, i64 }>
%struct.out.PipeRoot = type <{ float, i64 }>

; Function Attrs: nounwind uwtable
define dso_local %struct.out.saxpy @saxpy_cloned(float* in %X, i64 %bytes_X, float* in %Y, i64 %bytes_Y, float* out %Z, i64 %bytes_Z, float %a) #0 {
entry:
  %node = call i8* @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %node)
  %base = shl i64 %i, 2
  br label %for.body

for.body:                                         ; preds = %for.body, %entry
  %j = phi i64 [ 0, %entry ], [ %j.next, %for.body ]
  %k = add nuw nsw i64 %base, %j
  %px = getelementptr inbounds float, float* %X, i64 %k
  %x = load float, float* %px, align 4, !tbaa !5
  %py = getelementptr inbounds float, float* %Y, i64 %k
  %y = load float, float* %py, align 4, !tbaa !5
  %ax = fmul float %x, %a
  %z = fadd float %ax, %y
  %pz = getelementptr inbounds float, float* %Z, i64 %k
  store float %z, float* %pz, align 4, !tbaa !5
  %j.next = add nuw nsw i64 %j, 1
  %done = icmp eq i64 %j.next, 4
  br i1 %done, label %for.end, label %for.body

for.end:                                          ; preds = %for.body
  %returnStruct = insertvalue %struct.out.saxpy undef, float %z, 0
  %returnStruct1 = insertvalue %struct.out.saxpy %returnStruct, i64 %bytes_Z, 1
  ret %struct.out.saxpy %returnStruct1
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.PipeRoot @PipeRoot_cloned(float* in %X, i64 %bytes_X, float* in %Y, i64 %bytes_Y, float* out %Z, i64 %bytes_Z, float %a, i64 %n) #0 {
entry:
  %saxpy_cloned.node = call i8* @llvm.hpvm.createNode1D(i8* bitcast (%struct.out.saxpy (float*, i64, float*, i64, float*, i64, float)* @saxpy_cloned to i8*), i64 %n)
  call void @llvm.hpvm.bind.input(i8* %saxpy_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_cloned.node, i32 5, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_cloned.node, i32 6, i32 6, i1 false)
  call void @llvm.hpvm.bind.output(i8* %saxpy_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.output(i8* %saxpy_cloned.node, i32 1, i32 1, i1 false)
  ret %struct.out.PipeRoot undef
}

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #1 {
entry:
  %RootArgs = alloca %struct.Root, align 8
  %0 = bitcast %struct.Root* %RootArgs to i8*
  call void @llvm.lifetime.start.p0i8(i64 88, i8* nonnull %0) #2
  call void @llvm.hpvm.init()
  %graphID = call i8* @llvm.hpvm.launch(i8* bitcast (%struct.out.PipeRoot (float*, i64, float*, i64, float*, i64, float, i64)* @PipeRoot_cloned to i8*), i8* nonnull %0, i1 false)
  call void @llvm.hpvm.wait(i8* %graphID)
  call void @llvm.hpvm.cleanup()
  call void @llvm.lifetime.end.p0i8(i64 88, i8* nonnull %0) #2
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
declare void @llvm.hpvm.bind.output(i8*, i32, i32, i1) #2

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.start.p0i8(i64 immarg, i8* nocapture) #3

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.end.p0i8(i64 immarg, i8* nocapture) #3

; Function Attrs: nounwind
declare void @llvm.hpvm.init() #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.wait(i8*) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.cleanup() #2

attributes #0 = { nounwind uwtable "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "min-legal-vector-width"="0" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-jump-tables"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #1 = { nounwind uwtable "no-frame-pointer-elim"="false" "target-cpu"="x86-64" }
attributes #2 = { nounwind }
attributes #3 = { argmemonly nounwind }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}
!hpvm_hint_cpu = !{!2, !3}
!hpvm_hint_gpu = !{}
!hpvm_hint_cpu_gpu = !{}
!hpvm_hint_cudnn = !{}
!hpvm_hint_promise = !{}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 9.0.0"}
!2 = !{%struct.out.saxpy (float*, i64, float*, i64, float*, i64, float)* @saxpy_cloned}
!3 = !{%struct.out.PipeRoot (float*, i64, float*, i64, float*, i64, float, i64)* @PipeRoot_cloned}
!4 = !{!"Simple C/C++ TBAA"}
!5 = !{!6, !6, i64 0}
!6 = !{!"float", !7, i64 0}
!7 = !{!"omnipotent char", !4, i64 0}
